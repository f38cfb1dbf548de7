"""The same fits on the CPU and on CUDA, side by side in one run: time, quality, determinism,
and a CUDA-fitted model unpickled by a process that sees no GPU.

Usage: python benchmarks/bench_devices.py [--devices cpu cuda]

For each device: PICA on the paper's example (n = 10,000), NonlinearPICA on the nonlinear
mixture (n = 5,000), each fitted twice with the same ``random_state`` (the largest difference
between the two fits' transforms says how deterministic the device is), and the one-vs-rest
distance correlation of 64 features, n = 5,000 (numba on the CPU, torch float64 on CUDA).
"""

import argparse
import os
import pickle
import subprocess
import sys
import time
import warnings

import numpy as np
import torch

from sklearn_adm import PICA, NonlinearPICA
from sklearn_adm.datasets import make_nonlinear_mixture, make_pca_vs_pica
from sklearn_adm.metrics import distance_correlation_one_vs_rest

_UNPICKLE_WITHOUT_GPU = """
import pickle, sys
import numpy as np
model, X, expected = pickle.load(sys.stdin.buffer)
print(float(np.abs(model.transform(X) - expected).max()))
"""


def timed(function):
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = function()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return result, time.perf_counter() - start


def fit_twice(make_model, X, X_test):
    first, seconds = timed(lambda: make_model().fit(X))
    second, _ = timed(lambda: make_model().fit(X))
    Z = first.transform(X_test)
    difference = np.abs(Z - second.transform(X_test)).max()
    between = distance_correlation_one_vs_rest(Z)[0]
    residual = ((X_test - first.inverse_transform(Z)) ** 2).sum()
    r2 = 1 - residual / ((X_test - X_test.mean(axis=0)) ** 2).sum()
    return first, seconds, between, r2, difference


def unpickle_without_gpu(model, X):
    """Load ``model`` in a fresh process with CUDA hidden; largest transform difference."""
    payload = pickle.dumps((model, X, model.transform(X)))
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run(
        [sys.executable, "-c", _UNPICKLE_WITHOUT_GPU],
        input=payload,
        capture_output=True,
        env=env,
        check=True,
    )
    return float(done.stdout.decode().strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]
    parser.add_argument("--devices", nargs="+", default=default)
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads")
    if torch.cuda.is_available():
        print(f"GPU: {torch.cuda.get_device_name()}")

    X_pica, _ = make_pca_vs_pica(10_000, random_state=0)
    X_pica_test, _ = make_pca_vs_pica(20_000, random_state=1000)
    X_mix, _ = make_nonlinear_mixture(5_000, random_state=1)
    X_mix_test, _ = make_nonlinear_mixture(10_000, random_state=101)
    Z_wide = np.random.default_rng(0).standard_normal((5_000, 64))
    Z_wide[:, 1] += Z_wide[:, 0] ** 2

    rows, dcor_values, fitted = [], {}, {}
    for device in args.devices:
        timed(lambda d=device: PICA(2, max_iter=5, device=d).fit(X_pica[:100]))  # warm up
        for name, make, X, X_test in [
            ("PICA", lambda d=device: PICA(2, random_state=0, device=d), X_pica, X_pica_test),
            (
                "NonlinearPICA",
                lambda d=device: NonlinearPICA(2, random_state=1, device=d),
                X_mix,
                X_mix_test,
            ),
        ]:
            model, seconds, between, r2, difference = fit_twice(make, X, X_test)
            fitted[device, name] = (model, X_test)
            rows.append((name, device, seconds, model.n_iter_, between, r2, difference))
        distance_correlation_one_vs_rest(Z_wide[:200], device=device)  # compile / warm up
        dcor_values[device], seconds = timed(
            lambda d=device: distance_correlation_one_vs_rest(Z_wide, device=d)
        )
        rows.append(("dCor 64 vs rest", device, seconds, None, None, None, None))

    print(
        f"\n{'job':<16} {'device':<6} {'seconds':>8} {'n_iter':>7} {'dCor z':>7} {'R^2':>6}"
        f" {'same-seed diff':>15}"
    )
    for name, device, seconds, n_iter, between, r2, difference in rows:
        extra = (
            "" if n_iter is None else f" {n_iter:>7} {between:>7.3f} {r2:>6.3f} {difference:>15.2e}"
        )
        print(f"{name:<16} {device:<6} {seconds:>8.2f}{extra}")
    for name in ("PICA", "NonlinearPICA", "dCor 64 vs rest"):
        by_device = {device: seconds for job, device, seconds, *_ in rows if job == name}
        if "cpu" in by_device and "cuda" in by_device:
            print(f"{name}: cpu / cuda time = {by_device['cpu'] / by_device['cuda']:.2f}")
    if "cpu" in dcor_values and "cuda" in dcor_values:
        gap = np.abs(dcor_values["cpu"] - dcor_values["cuda"]).max()
        print(f"dCor, largest cpu-cuda difference: {gap:.1e}")
    for (device, name), (model, X_test) in fitted.items():
        if device.startswith("cuda"):
            gap = unpickle_without_gpu(model, X_test)
            print(f"{name} fitted on {device}, unpickled with no GPU visible: max diff {gap:.1e}")


if __name__ == "__main__":
    main()
