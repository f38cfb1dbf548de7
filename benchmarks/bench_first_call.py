"""The first call of ``DependenceScorer`` in a fresh process, numba's cache empty and warm.

Usage: python benchmarks/bench_first_call.py [--rows 2000] [--features 32] [--repeats 3]

Each of ``score``, ``per_feature``, ``pairwise`` and ``test`` (the first two columns against
the rest) runs in a fresh process whose numba cache is a new empty folder (a fresh virtual
environment's first call, every CI job's), then in a fresh process over that now warm
cache (a user's later sessions); each process also times the same call again (the steady
state). ``--repeats`` rounds alternate the methods, so that the machine's load hits all
alike; the table gives the median seconds and the range. The import is timed apart.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

_CHILD = """
import json, sys, time
import numpy as np
started = time.perf_counter()
from sklearn_adm import DependenceScorer
imported = time.perf_counter() - started
method, rows, features = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
X = np.random.default_rng(0).normal(size=(rows, features))
scorer = DependenceScorer(random_state=0)
call = {
    "score": lambda: scorer.score(X),
    "per_feature": lambda: scorer.per_feature(X),
    "pairwise": lambda: scorer.pairwise(X),
    "test": lambda: scorer.test(X[:, :2], X[:, 2:]),
}[method]
times = []
for _ in range(2):
    start = time.perf_counter()
    call()
    times.append(time.perf_counter() - start)
print(json.dumps({"import": imported, "first": times[0], "again": times[1]}))
"""

METHODS = ("score", "per_feature", "pairwise", "test")


def run(method, rows, features, cache):
    env = {**os.environ, "NUMBA_CACHE_DIR": cache}
    command = [sys.executable, "-c", _CHILD, method, str(rows), str(features)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--features", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    results = {(method, state): [] for method in METHODS for state in ("empty", "warm")}
    for _ in range(args.repeats):
        for method in METHODS:
            with tempfile.TemporaryDirectory() as cache:
                results[method, "empty"].append(run(method, args.rows, args.features, cache))
                results[method, "warm"].append(run(method, args.rows, args.features, cache))
    print(f"DependenceScorer() on {args.rows:,} x {args.features}, seconds (median, range)")
    print(f"{'method':12s} {'numba cache':11s} {'first call':>18s} {'again':>18s} {'import':>6s}")
    for (method, state), runs in results.items():
        cells = []
        for key in ("first", "again"):
            values = [r[key] for r in runs]
            cells.append(f"{np.median(values):.3f} ({min(values):.3f}-{max(values):.3f})")
        imported = np.median([r["import"] for r in runs])
        print(f"{method:12s} {state:11s} {cells[0]:>18s} {cells[1]:>18s} {imported:6.2f}")


if __name__ == "__main__":
    main()
