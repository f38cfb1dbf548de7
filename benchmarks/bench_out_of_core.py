"""Data beyond memory: a float32 ``.npy`` file read as users build their arrays (a memory map,
and Dask arrays from ``from_array`` over the map, ``from_npy_stack``, ``from_zarr``, one task
per chunk, and persisted on a two-worker LocalCluster), next to scikit-learn's
IncrementalPCA (the peer a user would pick for data of this size), in one run.

    python benchmarks/make_large_embeddings.py --rows 4000000 --out /tmp/emb.npy
    python benchmarks/bench_out_of_core.py /tmp/emb.npy [--n-components 32]
        [--arrays memmap from_array npy_stack zarr zarr-raw delayed cluster cluster-zarr]
        [--tasks pica ica ...] [--chunk-rows 100000 ...]
        [--partial-rows 400000] [--judge]

Each (array, task) runs in a fresh process that reports its seconds, its peak resident
memory (``ru_maxrss``: the file's pages it touched count there, though the system reclaims
them at will) and its peak anonymous memory (``RssAnon``, sampled every 10 ms: what the
process really holds), and the same of building the array. A task fits (PICA, ICA,
NonlinearPICA: ``fit`` then ``transform`` of every row into memory, whose output is
printed; ``*-partial``: ``partial_fit`` of the first ``--partial-rows`` rows, one pass of
the game over them), or scores (``DependenceScorer("dcor")`` and ``("adm")``, defaults).
The npy stack and the Zarr stores (``pip install zarr``; ``zarr`` compressed by Zarr's
default codec, ``zarr-raw`` not) are written next to the file once per ``--chunk-rows``;
each array is read in chunks of that many rows, and the table gives the chunk's size and
the bound that issue #94 sets on the anonymous memory: 1 GB plus two chunks.
For ``cluster``, the npy stack is persisted on the workers (as memory maps), for
``cluster-zarr`` the Zarr store (decoded, in the workers' memory), and the peak anonymous
memory during the task of the worker that exceeded its chunks most is printed beside its
chunks. ``--judge`` adds, for fits, the explained variance and the held-out R^2 of
gradient-boosted trees predicting each component and its square from the others on 5,000
rows drawn from the file (lower is more independent).
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import threading
import time
import warnings

import numpy as np

#: rows of a chunk of the Dask arrays, and of an IncrementalPCA batch
_CHUNK_ROWS = 100_000


class PeakAnonymous:
    """The largest ``RssAnon`` of this process while the block runs, sampled every 10 ms."""

    def __enter__(self):
        self.peak, self._stop = _rss_anon(), threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self):
        while not self._stop.wait(0.01):
            self.peak = max(self.peak, _rss_anon())

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss_anon())


def _rss_anon():
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("RssAnon"))
    return int(line.split()[1]) * 1024 / 1e9


def _stores(path, chunk_rows):
    """The npy stack and the Zarr stores (compressed and not) of ``path`` in chunks of
    ``chunk_rows``, written once, a chunk at a time."""
    import dask.array as da

    base = f"{path[: -len('.npy')]}_{chunk_rows}"
    stack, store, raw = base + "_stack", base + ".zarr", base + "_raw.zarr"
    if not os.path.exists(stack):
        da.to_npy_stack(stack, npy_as_dask(path, chunk_rows))
    if not os.path.exists(store):
        npy_as_dask(path, chunk_rows).to_zarr(store)
    if not os.path.exists(raw):
        npy_as_dask(path, chunk_rows).to_zarr(raw, compressors=None)
    return stack, store, raw


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


def build(kind, path, chunk_rows):
    import dask.array as da

    stack, store, raw = _stores(path, chunk_rows)
    if kind == "memmap":
        return np.load(path, mmap_mode="r")
    if kind == "from_array":
        return da.from_array(np.load(path, mmap_mode="r"), chunks=(chunk_rows, -1))
    if kind in ("npy_stack", "cluster"):
        return da.from_npy_stack(stack)
    if kind in ("zarr", "cluster-zarr"):
        return da.from_zarr(store)
    if kind == "zarr-raw":
        return da.from_zarr(raw)
    return npy_as_dask(path, chunk_rows)


def run_task(task, X, n_components, partial_rows, seed):
    """The task on ``X``: its model (None for a score) and what it reports."""
    from sklearn.decomposition import IncrementalPCA

    from sklearn_adm import ICA, PICA, DependenceScorer, NonlinearPICA

    estimators = {"pica": PICA, "ica": ICA, "npica": NonlinearPICA}
    report = {}
    start = time.perf_counter()
    if task.startswith("scorer"):
        report["score"] = float(DependenceScorer(task.partition("-")[2] or "dcor").score(X))
        report["seconds"] = time.perf_counter() - start
        return None, report
    if task == "ipca":
        model = IncrementalPCA(n_components)
        for first in range(0, len(X), _CHUNK_ROWS):
            model.partial_fit(np.asarray(X[first : first + _CHUNK_ROWS]))
    elif task.endswith("-partial"):
        model = estimators[task.split("-")[0]](n_components, random_state=seed)
        model.partial_fit(X[:partial_rows])
    else:
        model = estimators[task](n_components, random_state=seed).fit(X)
    report["seconds"] = time.perf_counter() - start
    start = time.perf_counter()
    if task == "ipca":
        Z = np.concatenate(
            [model.transform(X[i : i + _CHUNK_ROWS]) for i in range(0, len(X), _CHUNK_ROWS)]
        )
    else:
        Z = model.transform(X)
        Z = Z.compute() if hasattr(Z, "compute") else Z
    report["transform_seconds"] = time.perf_counter() - start
    report["output_gb"] = Z.nbytes / 1e9
    return model, report


def judge(model, path, judge_rows=5_000):
    from sklearn_adm import DependenceScorer

    X = np.load(path, mmap_mode="r")
    rows = np.sort(np.random.default_rng(12345).choice(len(X), judge_rows, replace=False))
    sample = np.asarray(X[rows], dtype=np.float64)
    Z = model.transform(sample)
    residual = sample - model.inverse_transform(Z)
    explained = 1 - np.sum(residual**2) / np.sum((sample - sample.mean(axis=0)) ** 2)
    trees = DependenceScorer("hgb", max_samples=None, random_state=0).score(Z)
    return {"explained": float(explained), "trees": float(trees)}


def _start_sampling(dask_worker):
    """On a worker: sample its anonymous memory from now on."""
    dask_worker.anonymous_peak = PeakAnonymous().__enter__()


def _worker_peak_gb(dask_worker):
    """On a worker: its peak anonymous memory since sampling began, and the bytes of the
    chunks it holds, in GB."""
    dask_worker.anonymous_peak.__exit__()
    chunks = sum(getattr(value, "nbytes", 0) for value in dask_worker.data.values())
    return dask_worker.anonymous_peak.peak, chunks / 1e9


def child(args):
    warnings.simplefilter("ignore")
    with PeakAnonymous() as building:
        start = time.perf_counter()
        X = build(args.child_array, args.path, args.chunk_rows[0])
        build_seconds = time.perf_counter() - start
    report = {"build_seconds": build_seconds, "build_anon_gb": building.peak}
    if args.child_array.startswith("cluster"):
        from distributed import Client, LocalCluster, wait

        cluster = LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None)
        with cluster, Client(cluster) as client:
            X = X.persist()
            wait(X)
            client.run(_start_sampling)  # the fit's memory, beside the chunks persisted
            with PeakAnonymous() as running:
                model, task_report = run_task(
                    args.child_task, X, args.n_components, args.partial_rows, args.seed
                )
            peaks = client.run(_worker_peak_gb).values()
            report["worker_anon_gb"], report["worker_chunks_gb"] = max(
                peaks, key=lambda p: p[0] - p[1]
            )
    else:
        with PeakAnonymous() as running:
            model, task_report = run_task(
                args.child_task, X, args.n_components, args.partial_rows, args.seed
            )
    report.update(task_report, anon_gb=running.peak)
    report["rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    if args.judge and model is not None and not args.child_task.startswith("ipca"):
        report.update(judge(model, args.path))
    print(json.dumps(report))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path")
    parser.add_argument("--n-components", type=int, default=32)
    parser.add_argument("--partial-rows", type=int, default=400_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--judge", action="store_true")
    parser.add_argument("--chunk-rows", type=int, nargs="+", default=[_CHUNK_ROWS])
    parser.add_argument(
        "--arrays",
        nargs="+",
        default=["memmap", "from_array", "npy_stack", "zarr", "delayed", "cluster", "cluster-zarr"],
    )
    parser.add_argument(
        "--tasks",
        nargs="+",
        default=["pica", "ica", "npica", "pica-partial", "ica-partial", "scorer", "scorer-adm"],
    )
    parser.add_argument("--child-array", help=argparse.SUPPRESS)
    parser.add_argument("--child-task", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_array:
        return child(args)
    shape = np.load(args.path, mmap_mode="r").shape
    print(f"{args.path}: {shape[0]:,} x {shape[1]} float32, {args.n_components} components")
    print(
        f"{'array':11s} {'chunk MB':>8s} {'task':13s} {'build s':>7s} {'anon GB':>7s} "
        f"{'task s':>7s} {'transform s':>11s} {'output GB':>9s} {'anon GB':>7s} {'bound':>6s} "
        f"{'RSS GB':>6s}  other"
    )
    runs = [("memmap", "ipca", _CHUNK_ROWS)] + [
        (a, t, rows) for rows in args.chunk_rows for a in args.arrays for t in args.tasks
    ]
    for array, task, chunk_rows in runs:
        _stores(args.path, chunk_rows)
        chunk_gb = chunk_rows * shape[1] * 4 / 1e9
        command = [sys.executable, __file__, args.path, "--child-array", array]
        command += ["--child-task", task, "--n-components", str(args.n_components)]
        command += ["--partial-rows", str(args.partial_rows), "--seed", str(args.seed)]
        command += ["--chunk-rows", str(chunk_rows)] + (["--judge"] if args.judge else [])
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode:
            print(f"{array:11s} {task:13s} failed: {done.stderr.strip().splitlines()[-1]}")
            continue
        r = json.loads(done.stdout.strip().splitlines()[-1])
        other = [f"{key} {r[key]:.4f}" for key in ("score", "explained", "trees") if key in r]
        if "worker_anon_gb" in r:
            anon, chunks = r["worker_anon_gb"], r["worker_chunks_gb"]
            other.append(f"worker {anon:.2f} GB, its chunks {chunks:.2f} GB")
        print(
            f"{array:11s} {chunk_gb * 1e3:8.0f} {task:13s} {r['build_seconds']:7.1f} "
            f"{r['build_anon_gb']:7.2f} {r['seconds']:7.1f} {r.get('transform_seconds', 0):11.1f} "
            f"{r.get('output_gb', 0):9.2f} {r['anon_gb']:7.2f} {1 + 2 * chunk_gb:6.2f} "
            f"{r['rss_gb']:6.2f}  " + ", ".join(other),
            flush=True,
        )


if __name__ == "__main__":
    main()
