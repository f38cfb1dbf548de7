"""Fit time and quality of NonlinearPICA on the nonlinear mixture (n = 5,000), next to a
plain autoencoder (the same network with dependence_weight=0) and PCA from the same run.

Quality on 10,000 fresh rows: R^2 of the reconstruction, distance correlation between the two
components, and how well each component follows one factor: "follows" is the smallest dCor
of a component with the factor it follows, "leak" the largest dCor with the other factor.

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
        X_test, factors = make_nonlinear_mixture(10_000, random_state=100 + seed)
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
            with_factors = np.array(
                [[dcor.distance_correlation(z, f, method="avl") for f in factors.T] for z in Z.T]
            )
            follows, leak = np.sort(with_factors, axis=1).T[::-1]
            results.setdefault(name, []).append((seconds, r2, between, follows.min(), leak.max()))
    reference = np.median([r[0] for r in results["PCA"]])
    print(
        f"{'method':<14} {'median fit (s)':>15} {'max fit (s)':>12} {'x PCA':>8}"
        f" {'R^2 (min)':>10} {'dCor (max)':>11} {'follows (min)':>14} {'leak (max)':>11}"
    )
    for name, rows in results.items():
        seconds, r2, between, follows, leak = np.array(rows).T
        print(
            f"{name:<14} {np.median(seconds):>15.2f} {seconds.max():>12.2f}"
            f" {np.median(seconds) / reference:>8.0f} {r2.min():>10.3f} {between.max():>11.3f}"
            f" {follows.min():>14.2f} {leak.max():>11.2f}"
        )
    per_seed = [round(float(row[2]), 3) for row in results["NonlinearPICA"]]
    print("NonlinearPICA, dCor between components per seed:", per_seed)


if __name__ == "__main__":
    main()
