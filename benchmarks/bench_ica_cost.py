"""ICA's cost next to FastICA's and Picard's, in one run: time and Amari error.

Cases: scikit-learn's simple case (a square wave and a Cauchy source, 1,000 rows), two
Laplace sources of 1,000 rows, eight speech-like sources of 64,000 rows (amplitude-modulated
Laplace and gated pulse trains at 16 kHz) and 32 sources of 100,000 rows (Laplace, uniform
and t5). Each method fits the same data; the ratio is ICA's time over Picard's. Warnings
each fit raised are counted.

    python benchmarks/bench_ica_cost.py [--cases simple,two,speech,large] [--repeats 1]
"""

import argparse
import time
import warnings

import numpy as np
from ica_sources import amari_error
from picard import picard
from scipy import stats
from sklearn.decomposition import FastICA

from sklearn_adm import ICA


def simple():
    n = 1000
    square = (2 * np.sin(np.linspace(0, 100, n)) > 0) - 1.0
    cauchy = stats.t.rvs(1, size=n, random_state=42)
    sources = np.c_[square, cauchy]
    sources = (sources - sources.mean(axis=0)) / sources.std(axis=0)
    phi = 0.6
    mixing = np.array([[np.cos(phi), np.sin(phi)], [np.sin(phi), -np.cos(phi)]])
    return sources @ mixing.T, mixing


def two():
    rng = np.random.default_rng(1)
    mixing = rng.normal(size=(2, 2))
    return rng.laplace(size=(1000, 2)) @ mixing.T, mixing


def speech():
    rng = np.random.default_rng(2)
    n, t = 64_000, np.arange(64_000) / 16_000
    columns = []
    for i in range(8):
        if i % 2:  # a gated pulse train
            columns.append(
                np.sign(np.sin(2 * np.pi * (100 + 50 * i) * t)) * rng.laplace(size=n) ** 2
            )
        else:  # amplitude-modulated Laplace noise
            columns.append(rng.laplace(size=n) * np.abs(np.sin(2 * np.pi * (3 + i) * t)))
    mixing = rng.normal(size=(8, 8))
    return np.column_stack(columns) @ mixing.T, mixing


def large():
    rng = np.random.default_rng(0)
    draws = [
        rng.laplace,
        lambda size: rng.uniform(-1, 1, size),
        lambda size: rng.standard_t(5, size),
    ]
    sources = np.column_stack([draws[i % 3](size=100_000) for i in range(32)])
    mixing = rng.normal(size=(32, 32))
    return sources @ mixing.T, mixing


CASES = {"simple": simple, "two": two, "speech": speech, "large": large}
METHODS = {
    "FastICA": lambda X: FastICA(X.shape[1], random_state=0).fit(X).components_,
    "Picard": lambda X: (lambda w, u: u @ w)(
        *picard(X.T, n_components=X.shape[1], random_state=0)[:2]
    ),
    "ICA": lambda X: ICA(random_state=0, device="cpu").fit(X).components_,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--repeats", type=int, default=1, help="fits per method; the median")
    args = parser.parse_args()
    ICA(random_state=0).fit(two()[0])  # imports and first allocations out of the timings
    print(f"{'case':8s} {'method':8s} {'time':>8s} {'Amari x100':>10s} {'warnings':>8s}")
    for case in args.cases.split(","):
        X, mixing = CASES[case]()
        seconds = {}
        for name, unmix in METHODS.items():
            times = []
            for _ in range(args.repeats):
                start = time.perf_counter()
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    unmixing = unmix(X)
                times.append(time.perf_counter() - start)
            seconds[name] = float(np.median(times))
            error = amari_error(unmixing, mixing)
            print(f"{case:8s} {name:8s} {seconds[name]:7.2f}s {error:10.3f} {len(caught):8d}")
        print(f"{case:8s} ICA / Picard time: {seconds['ICA'] / seconds['Picard']:.1f}x")


if __name__ == "__main__":
    main()
