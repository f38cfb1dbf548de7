"""Fit time of PICA on the paper's example, next to PCA and FastICA from the same run.

Usage: python benchmarks/bench_pica.py [--repeats 5] [--n-samples 10000]

Each repeat draws the example with a new seed and fits the three methods on it in turn, so
the machine's load hits them alike; the table gives median times, the ratio to PCA, and
PICA's quality on fresh rows (distance correlation between its two components, squared
reconstruction error per row).
"""

import argparse
import time
import warnings

import dcor
import numpy as np
import torch
from sklearn.decomposition import PCA, FastICA

from sklearn_adm import PICA
from sklearn_adm.datasets import make_pca_vs_pica


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--n-samples", type=int, default=10_000)
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; n = {args.n_samples}")
    times = {"PCA": [], "FastICA": [], "PICA": []}
    quality = []
    for seed in range(args.repeats):
        X, _ = make_pca_vs_pica(args.n_samples, random_state=seed)
        X_test, _ = make_pca_vs_pica(20_000, random_state=1000 + seed)
        models = {
            "PCA": PCA(n_components=2),
            "FastICA": FastICA(n_components=2, whiten="unit-variance", random_state=seed),
            "PICA": PICA(n_components=2, random_state=seed),
        }
        for name, model in models.items():
            start = time.perf_counter()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                model.fit(X)
            times[name].append(time.perf_counter() - start)
        pica = models["PICA"]
        Z = pica.transform(X_test)
        directions = pica.components_ / np.linalg.norm(pica.components_, axis=1, keepdims=True)
        quality.append(
            (
                dcor.distance_correlation(Z[:, 0], Z[:, 1], method="avl"),
                np.mean(np.sum((X_test - pica.inverse_transform(Z)) ** 2, axis=1)),
                min(abs(directions[0, 0]), abs(directions[1, 2])),
                pica.n_iter_,
                len(caught),
            )
        )
        print(
            f"seed {seed}: PICA {times['PICA'][-1]:.2f} s, {pica.n_iter_} iterations, "
            f"dCor {quality[-1][0]:.4f}, reconstruction {quality[-1][1]:.2f}, "
            f"min |cos| to e1/e3 {quality[-1][2]:.3f}, warnings {quality[-1][4]}"
        )
    reference = np.median(times["PCA"])
    print(f"\n{'method':<8} {'median fit (s)':>15} {'x PCA':>10}")
    for name, values in times.items():
        median = np.median(values)
        print(f"{name:<8} {median:>15.3f} {median / reference:>10.0f}")
    dcors, errors, cosines, _, _ = np.array(quality).T
    print(
        f"\nPICA over {args.repeats} seeds: dCor max {dcors.max():.4f} "
        f"(median {np.median(dcors):.4f}),"
        f" reconstruction {errors.min():.2f}-{errors.max():.2f}, min |cos| {cosines.min():.3f}"
    )


if __name__ == "__main__":
    main()
