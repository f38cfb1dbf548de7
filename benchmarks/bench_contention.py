"""Fit times on an idle machine and beside other busy processes, with the threads each fit
chooses and with the caller's threads (torch's default: every core), in one run.

Usage: python benchmarks/bench_contention.py [--busy 0 1 2] [--only NAME ...]

A busy process is ``python -c "while True: pass"``, started before the fits of its column
and killed after them. Every workload runs once first, untimed (a process's first call pays
imports and numba's compile), then in the same process, in turn, so that the load hits the
two thread policies alike; the table gives seconds and each column's ratio to the
idle time of the same policy. The bar (issue #50): no fit more than 2.5x slower with one busy
process than idle, on 2 cores.
"""

import argparse
import subprocess
import sys
import time
import warnings

import numpy as np
import torch
from bench_times import embeddings
from scipy import signal
from sklearn.datasets import load_digits

from sklearn_adm import ICA, PICA, DependenceScorer, NonlinearPICA, training_threads
from sklearn_adm.datasets import make_embedding_like, make_pca_vs_pica


def square_wave_and_cauchy():
    """scikit-learn's FastICA test case: a square wave and a heavy-tailed source, 2 mixtures."""
    rng = np.random.default_rng(0)
    time_ = np.linspace(0, 100, 1000)
    sources = np.c_[signal.square(np.sin(time_)), rng.standard_cauchy(1000)]
    sources = (sources - sources.mean(axis=0)) / sources.std(axis=0)
    angle = 0.6
    mixing = np.array([[np.cos(angle), np.sin(angle)], [np.sin(angle), -np.cos(angle)]])
    return sources @ mixing.T


def workloads():
    paper, _ = make_pca_vs_pica(10_000, random_state=0)
    digits = load_digits().data
    text, text_name = embeddings()
    mixtures = square_wave_and_cauchy()
    features = make_embedding_like(2000, 32, random_state=0)[0]
    return {
        "PICA(2), paper's example, 10,000 rows": lambda: PICA(2, random_state=0).fit(paper),
        "PICA(10), digits[:1198]": lambda: PICA(10, random_state=0).fit(digits[:1198]),
        f"PICA(32), {text_name} {text.shape[0]} x {text.shape[1]}": lambda: PICA(
            32, random_state=0
        ).fit(text),
        "NonlinearPICA(8), digits": lambda: NonlinearPICA(8, random_state=0).fit(digits),
        "ICA, square wave + Cauchy, 1,000 rows": lambda: ICA(random_state=0).fit(mixtures),
        "DependenceScorer('dcor'), 2,000 x 32": lambda: DependenceScorer("dcor").score(features),
        "DependenceScorer('adm'), 2,000 x 32": lambda: DependenceScorer(
            "adm", random_state=0
        ).score(features),
    }


def timed(work, threads):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        if threads is None:
            work()
        else:
            with training_threads(threads):
                work()
        return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--only", nargs="*", default=None, help="workloads whose name has this")
    args = parser.parse_args()
    caller = torch.get_num_threads()
    print(f"torch {torch.__version__}, caller's threads {caller}; busy processes {args.busy}")
    jobs = {
        name: work
        for name, work in workloads().items()
        if not args.only or any(part in name for part in args.only)
    }
    for work in jobs.values():  # a process's first call of each (imports, numba's compile)
        timed(work, None)
    policies = {"chosen": None, f"caller's {caller}": caller}
    seconds = {}
    for name, work in jobs.items():
        for busy in args.busy:
            hogs = [
                subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)
            ]
            try:
                time.sleep(0.5)  # let the scheduler see them
                for policy, threads in policies.items():
                    seconds[name, busy, policy] = timed(work, threads)
            finally:
                for hog in hogs:
                    hog.kill()
                    hog.wait()
        print(
            f"  {name}: "
            + ", ".join(
                f"{policy} {busy} busy {seconds[name, busy, policy]:.1f} s"
                for busy in args.busy
                for policy in policies
            ),
            flush=True,
        )
    header = "".join(f"{f'{p}, {b} busy':>22}" for b in args.busy for p in policies)
    print(f"\n{'workload':<42}{header}")
    for name in jobs:
        cells = []
        for busy in args.busy:
            for policy in policies:
                value = seconds[name, busy, policy]
                idle = seconds.get((name, 0, policy))
                ratio = f" ({value / idle:.1f}x)" if idle and busy else ""
                cells.append(f"{f'{value:.2f} s{ratio}':>22}")
        print(f"{name:<42}" + "".join(cells))


if __name__ == "__main__":
    main()
