"""PC on Sachs et al. (2005)'s proteins: causal-learn's tests and sklearn-adm's, over seeds.

Usage: python benchmarks/bench_sachs.py DIR [--tests adm_dcor,rcit] [--seeds 0-9]

``DIR`` is the ``real/sachs`` folder of cmu-phil/example-causal-datasets (these machines
reach no network: clone it where they can): ``data/sachs.2005.continuous.txt``, 7,466
cells x 11 proteins, raw values, and ``ground.truth/sachs.2005.ground.truth.graph.txt``,
the consensus graph of 20 edges. Each (test, seed) is causal-learn's stable PC at alpha
0.01 in a fresh process; the seed is ours' ``random_state`` and numpy's global seed for
causal-learn's tests (RCIT draws its features from it). Printed: the edges found, the
skeleton's precision, recall and F1 against the consensus graph's, the seconds, the
edges found that the graph lacks; then each test's mean over the seeds.

Needs the bench extra (causal-learn).
"""

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from bench_causal import compile_kernels, seeds, skeleton_scores

ALPHA = 0.01


def read(folder):
    """The data ``(n, p)``, the proteins' names and the consensus skeleton ``(p, p)``."""
    folder = Path(folder)
    table = pd.read_csv(folder / "data" / "sachs.2005.continuous.txt", sep="\t")
    names = list(table.columns)
    truth = np.zeros((len(names), len(names)), dtype=bool)
    graph = folder / "ground.truth" / "sachs.2005.ground.truth.graph.txt"
    for line in graph.read_text().splitlines():
        if "-->" in line:  # "1. erk --> akt"
            cause, effect = line.split(". ", 1)[1].split(" --> ")
            i, j = names.index(cause.strip()), names.index(effect.strip())
            truth[i, j] = truth[j, i] = True
    return table.to_numpy(dtype=float), names, truth


def run_one(folder, test, seed):
    """PC with ``test`` and ``seed`` on the proteins; a dict of figures."""
    from causallearn.search.ConstraintBased.PC import pc

    data, names, truth = read(folder)
    params = {}
    if test.startswith("adm_"):
        compile_kernels(data)
        params["random_state"] = seed
    else:
        np.random.seed(seed)  # noqa: NPY002 (RCIT draws its features from numpy's global seed)
    start = time.perf_counter()
    graph = pc(data, ALPHA, test, stable=True, show_progress=False, **params).G.graph
    seconds = time.perf_counter() - start
    precision, recall, f1 = skeleton_scores(truth, graph)
    found = np.triu((graph != 0) | (graph != 0).T, k=1)
    extra = [f"{names[i]}-{names[j]}" for i, j in zip(*np.nonzero(found & ~truth), strict=True)]
    return {
        "edges": int(found.sum()),
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "seconds": seconds,
        "extra": extra,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder")
    parser.add_argument("--tests", default="adm_dcor,rcit")
    parser.add_argument("--seeds", default="0-9", type=seeds)
    parser.add_argument("--one", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        test, seed = args.one
        print(json.dumps(run_one(args.folder, test, int(seed))))
        return
    print(f"PC (stable, alpha {ALPHA}) on Sachs's proteins, the consensus skeleton")
    print(
        f"{'test':>9} {'seed':>4} {'edges':>5} {'prec':>5} {'recall':>6} {'F1':>5} {'seconds':>8}"
    )
    results = {}
    for test in args.tests.split(","):
        for seed in args.seeds:
            command = [sys.executable, __file__, args.folder, "--one", test, str(seed)]
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            f = json.loads(done.stdout.strip().splitlines()[-1])
            results.setdefault(test, []).append(f)
            print(
                f"{test:>9} {seed:>4} {f['edges']:>5} {f['precision']:5.2f} {f['recall']:6.2f} "
                f"{f['f1']:5.3f} {f['seconds']:8.1f}  extra: {', '.join(f['extra'])}",
                flush=True,
            )
    for test, runs in results.items():
        f1 = [f["f1"] for f in runs]
        seconds = statistics.mean(f["seconds"] for f in runs)
        print(
            f"{test:>9}: F1 mean {statistics.mean(f1):.3f} ({min(f1):.3f}-{max(f1):.3f}) over "
            f"{len(runs)} seeds, {seconds:.1f} s a run"
        )


if __name__ == "__main__":
    main()
