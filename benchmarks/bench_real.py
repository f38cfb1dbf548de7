"""PICA on real data: the variance-independence frontier next to PCA, FastICA and Picard.

Usage: python benchmarks/bench_real.py [--data docstrings|digits] [--n-components 32]
                                      [--weights 0.1 0.3 1]

Data: ``docstrings`` are MiniLM sentence embeddings of numpy/scipy/scikit-learn docstrings
(make them first with ``benchmarks/make_embeddings.py``); ``digits`` is scikit-learn's bundled
set. Every method is fitted on the same rows in one run and judged alike:

* explained variance: ``1 - |X - inverse_transform(transform(X))|^2 / |X - mean|^2``;
* dependence: ``DependenceScorer("hgb")``, the held-out R^2 of gradient-boosted trees
  predicting each component (and its square) from the others, a model family other than the
  ADM critic, with the ratio to FastICA's and to the better of FastICA and Picard;
* kNN: 5-fold accuracy of a 10-nearest-neighbour classifier on the labels;
* fit time, and whether the fit stopped at ``max_iter`` (a ConvergenceWarning).

Picard (``python-picard``) and the embedding model come with the ``bench`` extra.
"""

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits
from sklearn.decomposition import PCA, FastICA
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import cross_val_score
from sklearn.neighbors import KNeighborsClassifier

from sklearn_adm import PICA, DependenceScorer


def load(name):
    if name == "digits":
        X, y = load_digits(return_X_y=True)
        return X.astype(np.float64), y
    path = Path(__file__).parent / "data" / "docstrings.npz"
    if not path.exists():
        raise SystemExit(f"{path} is missing: run python benchmarks/make_embeddings.py first.")
    data = np.load(path)
    return data["X"].astype(np.float64), data["labels"]


def methods(n_components, weights):
    yield "PCA", PCA(n_components)
    yield "FastICA", FastICA(n_components, whiten="unit-variance", max_iter=1000, random_state=0)
    try:
        from picard import Picard
    except ImportError:
        print("python-picard is not installed: Picard is left out (pip install -e '.[bench]').")
    else:
        yield "Picard", Picard(n_components, max_iter=1000, random_state=0)
    for weight in weights:
        yield f"PICA({weight:g})", PICA(n_components, dependence_weight=weight, random_state=0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="docstrings", choices=["docstrings", "digits"])
    parser.add_argument("--n-components", type=int, default=32)
    parser.add_argument("--weights", type=float, nargs="+", default=[0.1, 0.3, 0.5, 1.0, 2.0])
    args = parser.parse_args()
    X, y = load(args.data)
    print(
        f"{args.data}: {X.shape[0]} x {X.shape[1]}, {len(set(y))} labels, "
        f"{args.n_components} components"
    )
    judge = DependenceScorer("hgb", max_samples=None, random_state=0)
    rows = []
    for name, model in methods(args.n_components, args.weights):
        start = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            Z = model.fit_transform(X)
        seconds = time.perf_counter() - start
        stopped = any(issubclass(w.category, ConvergenceWarning) for w in caught)
        residual = X - model.inverse_transform(Z)
        explained = 1 - np.sum(residual**2) / np.sum((X - X.mean(axis=0)) ** 2)
        dependence = judge.per_feature(Z)
        knn = cross_val_score(KNeighborsClassifier(10), Z, y, cv=5).mean()
        rows.append((name, explained, dependence.mean(), knn, seconds, stopped))
        print(f"  {name}: {seconds:.1f} s", flush=True)
    pca, fastica = rows[0], rows[1]
    best_peer = min(r[2] for r in rows[1:] if not r[0].startswith("PICA"))
    print(
        f"\n{'method':<11} {'EV':>6} {'xPCA':>6} {'dependence':>10} {'xFastICA':>9} "
        f"{'xbest peer':>10} {'kNN':>6} {'fit (s)':>8}  stopped at max_iter"
    )
    for name, explained, dependence, knn, seconds, stopped in rows:
        print(
            f"{name:<11} {explained:6.3f} {explained / pca[1]:6.3f} {dependence:10.3f} "
            f"{dependence / fastica[2]:9.2f} {dependence / best_peer:10.2f} {knn:6.3f} "
            f"{seconds:8.1f}  {'yes' if stopped else ''}"
        )


if __name__ == "__main__":
    main()
