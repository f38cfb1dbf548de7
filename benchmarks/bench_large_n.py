"""Distance correlation and its tests at many rows, next to dcor and hyppo in one run.

Usage: python benchmarks/bench_large_n.py [--quick] [--level DRAWS] [--cpus native avx2]

1. ``pairwise`` of 64 one-dimensional columns of 1,000,000 rows, exact, against dcor's own
   O(n log n) algorithm (``method="avl"``) timed on a few pairs and scaled to all 2,016; the
   largest difference on those pairs; peak memory of a fresh process.
2. One column against the 31 others, all 32 columns, at 100,000 rows: the projection
   estimate (``n_projections=64``) and its error against the exact statistic on 20,000 rows,
   where the exact engine is timed too (its time at 100,000 rows scaled by ``n^2``).
3. ``test(x, y)`` of two one-dimensional samples of 100,000 rows (200 permutations, exact by
   sorting) against hyppo's ``Dcorr`` (its O(n log n) statistic with a chi-square
   approximation, ``auto=True``); with ``--level DRAWS``, the share of null draws rejected
   at 0.05 for both.
4. ``test(X, Y)`` of 5 and 5 columns of 100,000 rows: random projections by sorting; hyppo's
   and dcor's tests need ``n x n`` matrices (80 GB each here) and are timed at 2,000 rows.

``--quick`` uses 16 columns in 1 and 30,000 rows in 2-4. ``--cpus`` runs the whole list once
for each CPU level of ``.ci/as-cpu``, one after the other, each in a fresh process: ``avx2``
is what a CPU without AVX-512 gets (torch's kernels at AVX2, numba's target ``haswell``).
"""

import argparse
import multiprocessing
import os
import resource
import subprocess
import sys
import time
import warnings
from pathlib import Path

import dcor
import numpy as np

from sklearn_adm import DependenceScorer
from sklearn_adm.metrics import distance_correlation_one_vs_rest, distance_correlation_pairwise


def timed(function, *args, **kwargs):
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return result, time.perf_counter() - start


def _columns(n, d):
    """``d`` normal columns, the second a sine of the first plus noise."""
    Z = np.random.default_rng(0).normal(size=(n, d))
    Z[:, 1] = np.sin(3 * Z[:, 0]) + Z[:, 1]
    return Z


def _pairwise_in_fresh_process(n, d, queue):
    Z = _columns(n, d)
    distance_correlation_pairwise(Z[:1000, :3])  # compiled (cached on disk)
    result, seconds = timed(distance_correlation_pairwise, Z, squared=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    queue.put((result[:4, :4], seconds, peak))


def pairwise(n, d):
    queue = multiprocessing.get_context("spawn").Queue()
    process = multiprocessing.get_context("spawn").Process(
        target=_pairwise_in_fresh_process, args=(n, d, queue)
    )
    process.start()
    result, seconds, peak = queue.get()
    process.join()
    Z = _columns(n, d)
    pairs = [(0, 1), (0, 2), (2, 3)]
    dcor.distance_correlation_sqr(Z[:100, 0], Z[:100, 1], method="avl")  # compiled
    reference, reference_seconds = timed(
        lambda: [dcor.distance_correlation_sqr(Z[:, j], Z[:, k], method="avl") for j, k in pairs]
    )
    reference_seconds *= d * (d - 1) / 2 / len(pairs)
    difference = max(
        abs(result[j, k] - value) for (j, k), value in zip(pairs, reference, strict=True)
    )
    print(
        f"1. pairwise, {d} columns of {n:,} rows: ours {seconds:.1f} s, peak RSS {peak:.2f} GB "
        f"(the data {n * d * 8 / 2**30:.2f} GB); dcor avl {reference_seconds:.0f} s (scaled "
        f"from {len(pairs)} pairs), {reference_seconds / seconds:.1f}x; max |difference| "
        f"{difference:.1e}"
    )


def one_vs_rest(n, d=32, projections=64):
    rng = np.random.default_rng(1)
    sources = rng.uniform(-1, 1, size=(n, d))
    Z = sources @ rng.normal(size=(d, d)) / np.sqrt(d)  # every column depends on the others
    estimate, seconds = timed(
        distance_correlation_one_vs_rest, Z, n_projections=projections, random_state=0
    )
    small = Z[:20_000]
    exact, exact_seconds = timed(distance_correlation_one_vs_rest, small, squared=True)
    small_estimate = distance_correlation_one_vs_rest(
        small, squared=True, n_projections=projections, random_state=0
    )
    error = small_estimate - exact
    print(
        f"2. one vs rest, {d} columns of {n:,} rows: projections ({projections}) {seconds:.1f} s; "
        f"exact engine {exact_seconds * (n / 20_000) ** 2:.0f} s (scaled from 20,000 rows, "
        f"{exact_seconds:.1f} s). Error of dCor^2 at 20,000 rows: median "
        f"{np.median(np.abs(error) / exact):.1%} of the exact value, max {np.abs(error).max():.4f}"
        f" (exact {exact.min():.3f}-{exact.max():.3f})"
    )
    return estimate


def hyppo_dcorr(x, y, **kwargs):
    from hyppo.independence import Dcorr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Dcorr().test(x, y, **kwargs)


def two_samples(n, draws):
    rng = np.random.default_rng(2)
    x = rng.normal(size=n)
    y = 0.3 * np.cos(3 * x) + rng.normal(size=n)
    scorer = DependenceScorer(max_samples=None, random_state=0)
    scorer.test(x[:500], y[:500], n_permutations=3)  # compiled
    ours, seconds = timed(scorer.test, x, y)
    line = f"3. test(x, y), {n:,} rows: ours {seconds:.2f} s (p {ours.pvalue:.3f}, {ours.method})"
    try:
        (_, p_value), hyppo_seconds = timed(hyppo_dcorr, x, y, auto=True)
        line += f"; hyppo Dcorr(auto) {hyppo_seconds:.2f} s (p {p_value:.2g})"
    except ImportError:
        line += "; hyppo not installed"
    print(line)
    if not draws:
        return
    rejected = {"ours": 0, "hyppo": 0}
    for draw in range(draws):
        x, y = rng.standard_t(3, size=n), rng.exponential(size=n)
        rejected["ours"] += (
            DependenceScorer(max_samples=None, random_state=draw).test(x, y).pvalue <= 0.05
        )
        rejected["hyppo"] += hyppo_dcorr(x, y, auto=True)[1] <= 0.05
    print(
        f"   level over {draws} null draws (t(3) against exponential), alpha 0.05: ours "
        f"{rejected['ours'] / draws:.3f}, hyppo {rejected['hyppo'] / draws:.3f}"
    )


def multivariate(n):
    rng = np.random.default_rng(3)
    X, Y = rng.normal(size=(n, 5)), rng.normal(size=(n, 5))
    Y[:, 2] += 0.3 * X[:, 4] ** 2
    scorer = DependenceScorer(max_samples=None, random_state=0)
    ours, seconds = timed(scorer.test, X, Y)
    small, small_seconds = timed(scorer.test, X[:2000], Y[:2000])
    _, dcor_seconds = timed(
        dcor.independence.distance_covariance_test, X[:2000], Y[:2000], num_resamples=200
    )
    line = (
        f"4. test(X, Y), 5 and 5 columns, {n:,} rows: ours {seconds:.1f} s (p {ours.pvalue:.3f}, "
        f"{ours.method}); at 2,000 rows ours {small_seconds:.1f} s ({small.method}), dcor "
        f"{dcor_seconds:.1f} s"
    )
    try:
        _, hyppo_seconds = timed(hyppo_dcorr, X[:2000], Y[:2000], reps=200, workers=1)
        line += f", hyppo (chi-square, auto) {hyppo_seconds:.1f} s"
    except ImportError:
        pass
    print(line)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="16 columns in 1; 30,000 rows")
    parser.add_argument("--level", type=int, default=0, metavar="DRAWS", help="null draws in 3")
    parser.add_argument("--cpus", nargs="+", metavar="LEVEL", help="native, avx2 or default")
    args = parser.parse_args()
    if args.cpus:
        as_cpu = Path(__file__).resolve().parents[1] / ".ci" / "as-cpu"
        rest = [arg for arg in sys.argv[1:] if arg not in ("--cpus", *args.cpus)]
        for level in args.cpus:
            print(f"--- run as {level} ---", flush=True)
            environment = {**os.environ, "AS_CPU_PYTHON": sys.executable}
            command = [str(as_cpu), level, sys.executable, __file__, *rest]
            subprocess.run(command, env=environment, check=True)
        return
    n = 30_000 if args.quick else 100_000
    pairwise(1_000_000, 16 if args.quick else 64)
    one_vs_rest(n)
    two_samples(n, args.level)
    multivariate(n)


if __name__ == "__main__":
    main()
