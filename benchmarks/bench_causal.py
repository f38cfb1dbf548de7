"""PC on nonlinear structural equation models: causal-learn's tests and sklearn-adm's.

Each run is causal-learn's ``pc`` (stable, alpha 0.01) on data drawn from a random DAG whose
edges are nonlinear functions (sine, square, tanh, absolute value, linear) with Gaussian
noise, every variable standardised after it is drawn. Each (test, size) runs in a fresh
process with a time limit; the table gives the skeleton's precision, recall and F1 against
the true DAG's, the SHD of the CPDAG against the true DAG's CPDAG, the seconds, and the
tests PC asked (ours: the mean seconds a test took, against a lone test's).

    python benchmarks/bench_causal.py                      # the sizes below, every test
    python benchmarks/bench_causal.py --sizes 10x1000 --tests adm_dcor,rcit
    python benchmarks/bench_causal.py --sizes 20x1000,20x5000 --tests rcit,adm_dcor --seeds 0-4

Needs the bench extra (causal-learn).
"""

import argparse
import json
import subprocess
import sys
import time

import numpy as np

#: (variables, rows) run by default
SIZES = ["10x1000", "10x5000", "20x20000", "20x100000"]
#: causal-learn's tests and ours; KCI's cost is cubic in the rows
TESTS = ["fisherz", "kci", "fastkci", "rcit", "adm_dcor"]
#: seconds a run may take
LIMIT = 600
ALPHA = 0.01


def random_sem(p, n, seed):
    """A random DAG on ``p`` variables (about two parents each, in a random order) and ``n``
    rows drawn from it: its adjacency ``(p, p)`` (``[i, j]``: i causes j) and the data."""
    rng = np.random.default_rng(seed)
    adjacency = np.triu(rng.random((p, p)) < 2 / (p - 1) * 1.0, k=1)
    order = rng.permutation(p)
    adjacency = adjacency[np.ix_(np.argsort(order), np.argsort(order))]
    functions = [
        lambda x: np.sin(2 * x),
        np.square,
        lambda x: np.tanh(2 * x),
        np.abs,
        lambda x: x,
    ]
    data = np.zeros((n, p))
    for j in order:  # parents first: i before j where adjacency[i, j]
        value = 0.5 * rng.normal(size=n)
        for i in np.flatnonzero(adjacency[:, j]):
            value += rng.choice([-1, 1]) * functions[rng.integers(len(functions))](data[:, i])
        data[:, j] = (value - value.mean()) / value.std()
    return adjacency, data


def skeleton_scores(truth, graph):
    """Precision, recall and F1 of the skeleton of causal-learn's endpoint matrix ``graph``
    against the symmetric ``truth`` ``(p, p)``."""
    found = (graph != 0) | (graph != 0).T
    pairs = np.triu(np.ones_like(truth, dtype=bool), k=1)
    hits = (truth & found & pairs).sum()
    precision = hits / max((found & pairs).sum(), 1)
    recall = hits / max((truth & pairs).sum(), 1)
    return precision, recall, 2 * precision * recall / max(precision + recall, 1e-12)


def seeds(text):
    """``"0-4"`` or ``"0,3,5"`` as a list of seeds."""
    if "-" in text:
        first, last = text.split("-")
        return list(range(int(first), int(last) + 1))
    return [int(seed) for seed in text.split(",")]


def scores(adjacency, graph):
    """Skeleton precision, recall, F1 and the CPDAG's SHD of causal-learn's ``graph``."""
    from causallearn.graph.Dag import Dag
    from causallearn.graph.GraphNode import GraphNode
    from causallearn.graph.SHD import SHD
    from causallearn.utils.DAG2CPDAG import dag2cpdag

    p = len(adjacency)
    precision, recall, f1 = skeleton_scores(adjacency | adjacency.T, graph.graph)
    nodes = [GraphNode(f"X{i + 1}") for i in range(p)]
    dag = Dag(nodes)
    for i, j in zip(*np.nonzero(adjacency), strict=True):
        dag.add_directed_edge(nodes[i], nodes[j])
    return precision, recall, f1, SHD(dag2cpdag(dag), graph).get_shd()


def compile_kernels(data):
    """sklearn-adm's kernels compiled (or read from numba's cache) before the clock, as
    causal-learn's tests are imported before it: tests with and without a set on 300 rows
    (the permutations) and on 1,000 (the asymptotic null's). Registers "adm_dcor"."""
    from sklearn_adm.causal import CausalLearnTest

    for rows in (300, 1000):
        test = CausalLearnTest(data[:rows, :3])
        test(0, 1, [])
        test(0, 1, [2])


def run_one(test, p, n, seed):
    """PC with ``test`` on a SEM of ``p`` variables and ``n`` rows; a dict of figures."""
    from causallearn.search.ConstraintBased.PC import pc

    adjacency, data = random_sem(p, n, seed)
    params = {}
    if test == "adm_dcor":
        compile_kernels(data)
    start = time.perf_counter()
    result = pc(data, ALPHA, test, stable=True, show_progress=False, **params)
    seconds = time.perf_counter() - start
    precision, recall, f1, shd = scores(adjacency, result.G)
    figures = {"precision": precision, "recall": recall, "f1": f1, "shd": shd, "seconds": seconds}
    if test == "adm_dcor":
        tests = result.test.tests
        figures["tests"] = tests.n_tests_
        figures["per_test"] = seconds / max(tests.n_tests_, 1)
        figures["lone_test"] = _lone_test_seconds(data)
    else:
        figures["tests"] = len(result.test.pvalue_cache) - 3  # less the cache's own keys
    return figures


def _lone_test_seconds(data):
    """Mean seconds of DependenceScorer.test of two variables given two others, alone."""
    from sklearn_adm import DependenceScorer

    scorer = DependenceScorer(max_samples=None, random_state=0)
    start = time.perf_counter()
    for k in range(3):
        scorer.test(data[:, [k]], data[:, [k + 1]], Z=data[:, [k + 2, k + 3]])
    return (time.perf_counter() - start) / 3


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(SIZES))
    parser.add_argument("--tests", default=",".join(TESTS))
    parser.add_argument("--seeds", default="0", type=seeds, help='"0-4" or "0,3"')
    parser.add_argument("--limit", type=float, default=LIMIT)
    parser.add_argument("--one", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        test, p, n, seed = args.one
        print(json.dumps(run_one(test, int(p), int(n), int(seed))))
        return
    print(f"PC (stable, alpha {ALPHA}) on random nonlinear SEMs")
    print(
        f"{'size':>10} {'seed':>4} {'test':>9} {'prec':>5} {'recall':>6} {'F1':>5} {'SHD':>4} "
        f"{'seconds':>8} {'tests':>6}  ours: s/test (lone)"
    )
    runs = {}  # (size, test) -> {seed: figures}
    for size in args.sizes.split(","):
        p, n = (int(v) for v in size.split("x"))
        for seed in args.seeds:
            for test in args.tests.split(","):
                f = _run_in_a_process(test, p, n, seed, args.limit)
                if isinstance(f, str):
                    print(f"{size:>10} {seed:>4} {test:>9}  {f}")
                    continue
                runs.setdefault((size, test), {})[seed] = f
                ours = f" {f['per_test']:.3f} ({f['lone_test']:.3f})" if "per_test" in f else ""
                print(
                    f"{size:>10} {seed:>4} {test:>9} {f['precision']:5.2f} {f['recall']:6.2f} "
                    f"{f['f1']:5.2f} {f['shd']:4d} {f['seconds']:8.1f} {f['tests']:6d} {ours}",
                    flush=True,
                )
    if len(args.seeds) > 1:
        _against_rcit(runs, args.sizes.split(","))


def _run_in_a_process(test, p, n, seed, limit):
    """:func:`run_one` in a fresh process: its figures, or why there are none."""
    if test == "kci" and n > 5000:
        return "skipped: cubic in the rows"
    command = [sys.executable, __file__, "--one", test, str(p), str(n), str(seed)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=limit, check=True)
    except subprocess.TimeoutExpired:
        return f"over {limit:.0f} s"
    except subprocess.CalledProcessError as error:
        return f"failed: {error.stderr.strip().splitlines()[-1]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def _against_rcit(runs, sizes):
    """Per size, over the seeds both ran: in how many ours' F1 was at least RCIT's, and the
    range of ours' seconds over RCIT's."""
    for size in sizes:
        ours, rcit = runs.get((size, "adm_dcor"), {}), runs.get((size, "rcit"), {})
        both = sorted(set(ours) & set(rcit))
        if not both:
            continue
        at_least = sum(ours[s]["f1"] >= rcit[s]["f1"] for s in both)
        ratios = [ours[s]["seconds"] / rcit[s]["seconds"] for s in both]
        print(
            f"{size:>10}: adm_dcor's F1 at least RCIT's in {at_least} of {len(both)} seeds; "
            f"mean F1 {np.mean([ours[s]['f1'] for s in both]):.3f} against "
            f"{np.mean([rcit[s]['f1'] for s in both]):.3f}; seconds {min(ratios):.2f}-"
            f"{max(ratios):.2f} of RCIT's"
        )


if __name__ == "__main__":
    main()
