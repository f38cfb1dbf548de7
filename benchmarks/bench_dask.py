"""A grid search over a Pipeline with PICA: in sequence against a Dask cluster of two local
worker processes of one thread each (joblib's "dask" backend), warm, in one run; and on the
cluster with the allocator's thresholds left as Dask sets them (the fit's lift turned off).

    python benchmarks/bench_dask.py      (needs the "dask" extra: pip install "sklearn-adm[dask]")
"""

import time
import warnings

import joblib
from distributed import Client, LocalCluster
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_adm import PICA, DependenceScorer
from sklearn_adm.datasets import make_pca_vs_pica


def grid_search(X, n_jobs):
    pipeline = make_pipeline(StandardScaler(), PICA(n_components=2, max_iter=200, random_state=0))
    grid = {"pica__dependence_weight": [0.5, 1.0]}
    search = GridSearchCV(pipeline, grid, scoring=DependenceScorer(), cv=2, n_jobs=n_jobs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        search.fit(X)
    return time.perf_counter() - start


def leave_allocator_alone():
    from sklearn_adm._runtime import allocator

    allocator._mallopt = lambda: None


def main():
    X, _ = make_pca_vs_pica(2000, random_state=0)
    grid_search(X, 1)  # warm
    sequential = min(grid_search(X, 1) for _ in range(2))
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None)
    with cluster, Client(cluster) as client, joblib.parallel_backend("dask"):
        grid_search(X, -1)  # warm the workers
        on_cluster = min(grid_search(X, -1) for _ in range(2))
        client.run(leave_allocator_alone)
        without_lift = min(grid_search(X, -1) for _ in range(2))
    print("4 PICA fits (2 settings x 2 folds), 2,000 rows, best of 2 warm runs")
    print(f"n_jobs=1, one process             {sequential:6.2f} s   speed-up")
    for name, seconds in [
        ("Dask, 2 workers x 1 thread", on_cluster),
        ("  same, allocator as Dask's", without_lift),
    ]:
        print(f"{name:34s}{seconds:6.2f} s   {sequential / seconds:.2f}x")


if __name__ == "__main__":
    main()
