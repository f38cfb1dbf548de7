"""Fit times of the estimators next to the peer a user would pick, in one run.

Usage: python benchmarks/bench_times.py [--repeats 3] [--only NAME ...] [--device cpu]

Each workload fits this package's estimator and its peer in turn, ``--repeats`` times, so
that the machine's load hits both alike; the table gives the median seconds of each and their
ratio. The embeddings are the docstrings' MiniLM vectors when ``make_embeddings.py`` has made
them, else :func:`~sklearn_adm.datasets.make_embedding_like` rows of the same shape; at issue
#50's size, 3,054 x 384, the docstrings and the standard library's, and NonlinearPICA(8) fits
them with seeds 0, 1, 2, ... in turn (the range is then the spread over seeds). The grid
search is the one of issue #50: StandardScaler, then the decomposition, then a logistic
regression on scikit-learn's digits, 3 settings x 3 folds (16 components), ``n_jobs=1``.
"""

import argparse
import itertools
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits
from sklearn.decomposition import PCA, FastICA
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_adm import PICA, NonlinearPICA
from sklearn_adm.datasets import make_embedding_like, make_pca_vs_pica


def stored(*corpora):
    """The rows of ``corpora``, stacked in float64, where ``make_embeddings.py`` has made
    every one of them; else None."""
    paths = [Path(__file__).parent / "data" / f"{corpus}.npz" for corpus in corpora]
    if not all(path.exists() for path in paths):
        return None
    return np.vstack([np.load(path)["X"] for path in paths]).astype(np.float64)


def embeddings():
    X = stored("docstrings")
    if X is not None:
        return X, "docstrings"
    return make_embedding_like(3000, 384, random_state=0)[0], "make_embedding_like"


def issue_sized():
    """3,054 rows x 384, issue #50's size: the docstrings and then the standard library's."""
    X = stored("docstrings", "stdlib")
    if X is not None:
        return X[:3054], "docstrings+stdlib"
    return make_embedding_like(3054, 384, random_state=0)[0], "make_embedding_like"


def seeded(fit):
    """``fit(seed)`` with seeds 0, 1, 2, ... on successive calls."""
    seeds = itertools.count()
    return lambda: fit(next(seeds))


def grid_search(decomposition, grid):
    X, y = load_digits(return_X_y=True)
    pipeline = make_pipeline(StandardScaler(), decomposition, LogisticRegression(max_iter=300))
    return lambda: GridSearchCV(pipeline, grid, cv=3, n_jobs=1).fit(X, y)


def workloads(device):
    text, name = embeddings()
    large, large_name = issue_sized()
    digits = load_digits().data
    paper, _ = make_pca_vs_pica(10_000, random_state=0)
    shape = f"{text.shape[0]:,} x {text.shape[1]}"

    def fastica(k):
        return FastICA(k, whiten="unit-variance", max_iter=1000, random_state=0)

    return {
        f"PICA(32), {name} {shape}": (
            lambda: PICA(32, device=device, random_state=0).fit(text),
            ("FastICA(32)", lambda: fastica(32).fit(text)),
        ),
        "PICA(2), the paper's example, 10,000 rows": (
            lambda: PICA(2, device=device, random_state=0).fit(paper),
            ("PCA(2)", lambda: PCA(2).fit(paper)),
        ),
        "PICA(16), digits": (
            lambda: PICA(16, device=device, random_state=0).fit(digits),
            ("FastICA(16)", lambda: fastica(16).fit(digits)),
        ),
        f"NonlinearPICA(8), {name} {shape}": (
            lambda: NonlinearPICA(8, device=device, random_state=0).fit(text),
            ("PCA(8)", lambda: PCA(8).fit(text)),
        ),
        f"NonlinearPICA(8), {large_name} 3,054 x 384, seeds 0, 1, ..": (
            seeded(lambda seed: NonlinearPICA(8, device=device, random_state=seed).fit(large)),
            ("PCA(8)", lambda: PCA(8).fit(large)),
        ),
        "NonlinearPICA(8), digits": (
            lambda: NonlinearPICA(8, device=device, random_state=0).fit(digits),
            ("PCA(8)", lambda: PCA(8).fit(digits)),
        ),
        f"NonlinearPICA(32), {name} {shape}": (
            lambda: NonlinearPICA(32, device=device, random_state=0).fit(text),
            ("PCA(32)", lambda: PCA(32).fit(text)),
        ),
        "NonlinearPICA(32), digits": (
            lambda: NonlinearPICA(32, device=device, random_state=0).fit(digits),
            ("PCA(32)", lambda: PCA(32).fit(digits)),
        ),
        "grid search, digits, 3 settings x 3 folds": (
            grid_search(
                PICA(16, device=device, random_state=0),
                {"pica__dependence_weight": [0.1, 0.4, 1.0]},
            ),
            (
                "FastICA's",
                grid_search(fastica(16), {"fastica__fun": ["logcosh", "exp", "cube"]}),
            ),
        ),
    }


def timed(work):
    """Seconds of ``work()`` and whether it warned that it stopped at ``max_iter``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        work()
        seconds = time.perf_counter() - start
    return seconds, any("max_iter" in str(w.message) for w in caught)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", nargs="*", default=None, help="workloads whose name has this")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    jobs = {
        name: job
        for name, job in workloads(args.device).items()
        if not args.only or any(part in name for part in args.only)
    }
    timed(lambda: PICA(2, max_iter=20, device=args.device).fit(make_pca_vs_pica(500)[0]))
    rows = []
    for name, (ours, (peer_name, peer)) in jobs.items():
        mine, theirs, stopped = [], [], False
        for _ in range(args.repeats):
            seconds, hit = timed(ours)
            mine.append(seconds)
            stopped |= hit
            theirs.append(timed(peer)[0])
        rows.append((name, np.median(mine), min(mine), max(mine), peer_name, np.median(theirs)))
        print(f"  {name}: {', '.join(f'{s:.1f}' for s in mine)} s", flush=True)
        if stopped:
            print(f"  {name}: stopped at max_iter (a ConvergenceWarning)")
    width = max([48, *(len(row[0]) for row in rows)])
    print(
        f"\n{'workload':<{width}} {'median (range)':>20} {'peer':>12} {'peer (s)':>9} {'ratio':>7}"
    )
    for name, median, low, high, peer_name, peer in rows:
        spread = f"{median:.2f} ({low:.1f}-{high:.1f})"
        print(f"{name:<{width}} {spread:>20} {peer_name:>12} {peer:>9.2f} {median / peer:>7.1f}")


if __name__ == "__main__":
    main()
