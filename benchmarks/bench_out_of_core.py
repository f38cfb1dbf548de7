"""PICA out of core: a float32 ``.npy`` file larger than memory, fitted from a memory map and
from a Dask array on a two-worker LocalCluster, next to scikit-learn's IncrementalPCA (the
peer a user would pick for data of this size) and to PICA fitted in memory on a sample of
the rows. Every fit runs in a fresh process, which reports its own peak resident memory.

    python benchmarks/make_large_embeddings.py --rows 20000000 --out /tmp/emb.npy
    python benchmarks/bench_out_of_core.py /tmp/emb.npy [--n-components 64]
        [--sample-rows 1000000] [--only memmap dask ipca sample]

All are judged alike on the same rows drawn from the file (``--judge-rows``): explained
variance ``1 - |X - inverse_transform(transform(X))|^2 / |X - mean|^2``, and the held-out
R^2 of gradient-boosted trees predicting each component and its square from the others
(``DependenceScorer("hgb")``, a family other than the ADM critic). The Dask array is built as
a user would build one over a file (one task per chunk, each opening the file on the worker
that runs it): ``dask.array.from_array`` of a memory map copies the map into memory first.
"""

import argparse
import json
import resource
import subprocess
import sys
import time
import warnings

import numpy as np

#: rows of a chunk of the Dask array, and of an IncrementalPCA batch
_CHUNK_ROWS = 100_000


def npy_as_dask(path, chunk_rows=_CHUNK_ROWS):
    """A Dask array over a ``.npy`` file, one task per chunk of rows, each reading its rows
    through a memory map of its own (on whichever worker runs it)."""
    import dask
    import dask.array as da

    n_rows, n_features = np.load(path, mmap_mode="r").shape
    blocks = []
    for start in range(0, n_rows, chunk_rows):
        stop = min(start + chunk_rows, n_rows)
        rows = dask.delayed(_rows)(path, start, stop)
        blocks.append(da.from_delayed(rows, (stop - start, n_features), np.float32))
    return da.concatenate(blocks)


def _rows(path, start, stop):
    return np.load(path, mmap_mode="r")[start:stop]


def fit(kind, path, n_components, sample_rows, seed):
    """One fit, in this process: the model, seconds, and what else it reports."""
    from sklearn.decomposition import IncrementalPCA

    from sklearn_adm import PICA

    X = np.load(path, mmap_mode="r")
    extra = {}
    start = time.perf_counter()
    if kind == "memmap":
        model = PICA(n_components, random_state=seed).fit(X)
    elif kind == "dask":
        from distributed import Client, LocalCluster

        cluster = LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None)
        with cluster, Client(cluster) as client:
            start = time.perf_counter()
            model = PICA(n_components, random_state=seed).fit(npy_as_dask(path))
            seconds = time.perf_counter() - start
            peaks = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
            extra["worker_peak_gb"] = max(peaks.values()) / 1e6
        return model, seconds, extra
    elif kind == "ipca":
        model = IncrementalPCA(n_components)
        for first in range(0, len(X), _CHUNK_ROWS):
            model.partial_fit(X[first : first + _CHUNK_ROWS])
    else:  # PICA in memory on a random sample of rows
        rows = np.sort(np.random.default_rng(seed).choice(len(X), sample_rows, replace=False))
        sample = np.asarray(X[rows])
        start = time.perf_counter()
        model = PICA(n_components, random_state=seed).fit(sample)
    return model, time.perf_counter() - start, extra


def judge(model, path, judge_rows):
    from sklearn_adm import DependenceScorer

    X = np.load(path, mmap_mode="r")
    rows = np.sort(np.random.default_rng(12345).choice(len(X), judge_rows, replace=False))
    sample = np.asarray(X[rows], dtype=np.float64)
    Z = model.transform(sample)
    residual = sample - model.inverse_transform(Z)
    explained = 1 - np.sum(residual**2) / np.sum((sample - sample.mean(axis=0)) ** 2)
    trees = DependenceScorer("hgb", max_samples=None, random_state=0).score(Z)
    return float(explained), float(trees)


def child(args):
    warnings.simplefilter("ignore")
    model, seconds, extra = fit(
        args.child, args.path, args.n_components, args.sample_rows, args.seed
    )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    explained, trees = judge(model, args.path, args.judge_rows)
    print(
        json.dumps(
            {
                "seconds": seconds,
                "peak_gb": peak,
                "explained": explained,
                "trees": trees,
                "n_iter": int(getattr(model, "n_iter_", 0)),
                **extra,
            }
        )
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path")
    parser.add_argument("--n-components", type=int, default=64)
    parser.add_argument("--sample-rows", type=int, default=1_000_000)
    parser.add_argument("--judge-rows", type=int, default=5_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", nargs="+", default=["memmap", "dask", "ipca", "sample"])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)
    shape = np.load(args.path, mmap_mode="r").shape
    print(f"{args.path}: {shape[0]:,} x {shape[1]} float32, {args.n_components} components")
    print(f"{'method':34s} {'fit s':>8s} {'peak GB':>8s} {'explained':>10s} {'trees':>7s} updates")
    names = {
        "memmap": "PICA, memory map",
        "dask": "PICA, Dask (LocalCluster 2x1)",
        "ipca": "IncrementalPCA",
        "sample": f"PICA in memory, {args.sample_rows:,} rows",
    }
    for kind in args.only:
        command = [sys.executable, __file__, args.path, "--child", kind]
        command += ["--n-components", str(args.n_components), "--seed", str(args.seed)]
        command += ["--sample-rows", str(args.sample_rows), "--judge-rows", str(args.judge_rows)]
        result = json.loads(
            subprocess.run(command, capture_output=True, text=True, check=True).stdout
        )
        workers = (
            f"  (workers' peak {result['worker_peak_gb']:.2f} GB)"
            if "worker_peak_gb" in result
            else ""
        )
        print(
            f"{names[kind]:34s} {result['seconds']:8.1f} {result['peak_gb']:8.2f} "
            f"{result['explained']:10.4f} {result['trees']:7.4f} {result['n_iter']:7d}{workers}",
            flush=True,
        )


if __name__ == "__main__":
    main()
