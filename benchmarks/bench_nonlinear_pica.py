"""Fit time and quality of NonlinearPICA on the nonlinear mixture (n = 5,000), next to a
plain autoencoder (the same network with dependence_weight=0) and PCA from the same run.

Usage: python benchmarks/bench_nonlinear_pica.py [--repeats 3]
"""

import argparse
import time
import warnings

import dcor
import numpy as np
from sklearn.decomposition import PCA

from sklearn_adm import NonlinearPICA
from sklearn_adm.datasets import make_nonlinear_mixture


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    results = {}
    for seed in range(args.repeats):
        X, _ = make_nonlinear_mixture(5_000, random_state=seed)
        X_test, _ = make_nonlinear_mixture(10_000, random_state=100 + seed)
        models = {
            "PCA": PCA(n_components=2),
            "plain AE": NonlinearPICA(n_components=2, dependence_weight=0, random_state=seed),
            "NonlinearPICA": NonlinearPICA(n_components=2, random_state=seed),
        }
        for name, model in models.items():
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(X)
            seconds = time.perf_counter() - start
            Z = model.transform(X_test)
            residual = ((X_test - model.inverse_transform(Z)) ** 2).sum()
            r2 = 1 - residual / ((X_test - X_test.mean(axis=0)) ** 2).sum()
            between = dcor.distance_correlation(Z[:, 0], Z[:, 1], method="avl")
            results.setdefault(name, []).append((seconds, r2, between))
    reference = np.median([r[0] for r in results["PCA"]])
    print(
        f"{'method':<14} {'median fit (s)':>15} {'x PCA':>8} {'R^2 (min)':>10} {'dCor (max)':>11}"
    )
    for name, rows in results.items():
        seconds, r2, between = np.array(rows).T
        print(
            f"{name:<14} {np.median(seconds):>15.2f} {np.median(seconds) / reference:>8.0f}"
            f" {r2.min():>10.3f} {between.max():>11.3f}"
        )


if __name__ == "__main__":
    main()
