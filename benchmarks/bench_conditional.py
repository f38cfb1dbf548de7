"""Conditional independence tests side by side: type I error, power and time in one run.

Usage: python benchmarks/bench_conditional.py [--n 500 2000] [--repeats 100]
           [--methods dcor adm partial-correlation kci] [--cases null ...]

Each case draws ``Z`` uniform on [-1, 1] (one column; ``2d`` cases two), then ``X`` and ``Y``
from it. Under the nulls ``X`` and ``Y`` are independent given ``Z``, which drives both
nonlinearly (``null``: sin(3 z) and cos(4 z) with Gaussian noise; ``null-het``: noise whose
scale grows with |z|; ``null-2d``: tanh(z1 + z2) and z1 z2); under the alternatives ``Y``
also depends on ``X`` (``linear``) or both on a hidden variable (``squared``: ``H`` in X,
``H^2`` in Y). Every method tests the same draws; the table gives the share of draws rejected
at 0.05 and the mean seconds per test.

Methods: this package's ``DependenceScorer(metric).test(X, Y, Z=Z)`` with ``"dcor"`` and
``"adm"``; the partial correlation test (Fisher's z of the residuals of linear regressions on
Z); causal-learn's kernel conditional independence test (KCI, Zhang et al. 2011; the
``bench`` extra installs causal-learn), skipped beyond 2,000 rows where its n x n kernels take
minutes.
"""

import argparse
import time
import warnings

import numpy as np
from scipy import stats

from sklearn_adm import DependenceScorer

CASES = ("null", "null-het", "null-2d", "linear", "squared")
#: rows beyond which KCI is not run (its kernels are n x n, its cost cubic)
_KCI_ROWS = 2000


def draw(case, n, rng):
    """``X``, ``Y``, ``Z`` of one case, each ``(n, 1)`` (``Z`` ``(n, 2)`` for ``null-2d``)."""
    z = rng.uniform(-1, 1, size=(n, 2 if case == "null-2d" else 1))
    e1, e2, hidden = rng.normal(size=(3, n))
    t = z[:, 0]
    if case == "null-het":
        x, y = t + 0.5 * np.abs(t) * e1, t**2 + 0.5 * np.abs(t) * e2
    elif case == "null-2d":
        x, y = np.tanh(z[:, 0] + z[:, 1]) + 0.3 * e1, z[:, 0] * z[:, 1] + 0.3 * e2
    else:
        x, y = np.sin(3 * t) + 0.3 * e1, np.cos(4 * t) + 0.3 * e2
        if case == "linear":
            y = y + 0.3 * x
        elif case == "squared":
            x, y = x + 0.3 * hidden, y + 0.3 * hidden**2
    return x[:, None], y[:, None], z


def partial_correlation(x, y, z):
    """Fisher's z test of the correlation of the residuals of x and y given z (linear)."""
    design = np.column_stack([np.ones(len(z)), z])
    residuals = [a - design @ np.linalg.lstsq(design, a, rcond=None)[0] for a in (x, y)]
    r = np.corrcoef(residuals[0][:, 0], residuals[1][:, 0])[0, 1]
    statistic = np.sqrt(len(x) - z.shape[1] - 3) * np.arctanh(np.clip(r, -0.999999, 0.999999))
    return 2 * stats.norm.sf(abs(statistic))


def kci(x, y, z):
    from causallearn.utils.cit import CIT

    data = np.column_stack([x, y, z])
    test = CIT(data, "kci")
    return test(0, 1, list(range(2, data.shape[1])))


def method(name, seed):
    if name in ("dcor", "adm"):
        scorer = DependenceScorer(name, max_samples=None, random_state=seed)
        return lambda x, y, z: scorer.test(x, y, Z=z).pvalue
    return {"partial-correlation": partial_correlation, "kci": kci}[name]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[500, 2000])
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument(
        "--methods", nargs="+", default=["dcor", "adm", "partial-correlation", "kci"]
    )
    parser.add_argument("--cases", nargs="+", default=list(CASES))
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    print(f"{'case':<10} {'n':>6} " + " ".join(f"{m:>26}" for m in args.methods))
    for n in args.n:
        for case in args.cases:
            rng = np.random.default_rng(0)
            draws = [draw(case, n, rng) for _ in range(args.repeats)]
            cells = []
            for name in args.methods:
                if name == "kci" and n > _KCI_ROWS:
                    cells.append(f"{'(not run)':>26}")
                    continue
                start, p_values = time.perf_counter(), []
                for seed, (x, y, z) in enumerate(draws):
                    p_values.append(method(name, seed)(x, y, z))
                seconds = (time.perf_counter() - start) / len(draws)
                rejected = np.mean(np.array(p_values) <= 0.05)
                cells.append(f"{rejected:>12.2f} {seconds:>9.2f} s/test")
            print(f"{case:<10} {n:>6} " + " ".join(cells), flush=True)


if __name__ == "__main__":
    main()
