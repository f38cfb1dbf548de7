"""Conditional independence tests side by side: type I error, power and time in one run.

Usage: python benchmarks/bench_conditional.py [--n 600 2000] [--repeats 100]
           [--methods dcor adm partial-correlation kci fastkci] [--cases null cos ...]
           [--effect 1.0]

Every case draws ``X``, ``Y`` and ``Z`` so that the question is "is X independent of Y given
Z?". The table gives, per case and method, the share of draws rejected at 0.05 (the level
under the nulls, the power under the alternatives) and the mean seconds per test; every
method tests the same draws.

Nulls (X independent of Y given Z):

- ``null``: Z ~ U(-1, 1) drives both nonlinearly, sin(3 z) and cos(4 z), Gaussian noise;
- ``null-het``: noise whose scale grows with |z|;
- ``null-2d`` / ``null-3z``: two / three columns of Z (tanh of their sum, their product);
- ``null-t``: Student-t noise of 3 degrees of freedom;
- ``null-discrete``: Z takes 5 values, and Y's noise grows with it;
- ``null-multi``: X and Y of two columns each.

Alternatives where X's relation to Y is the same at every Z: ``linear`` (0.3 x added to
Y), ``squared`` (a hidden H in X and H^2 in Y), ``collider`` (Z = X + Y + noise),
``variance`` (Y's noise scaled by |X's noise|), ``checker`` (the sign of Y's noise follows
the sign of X's, mostly).

Alternatives where it changes with Z (Z ~ N(0, 1), X = Z + e1), which tests of the residuals
without Z average out: ``cos`` (Y = Z + 0.6 cos(2 X) + 0.5 e2), ``product`` (Y = 0.5 X Z +
e2), ``sign`` (Y = 0.5 sign(Z) e1 + e2: the slope changes sign with Z), ``variance-z``
(Y's noise scaled by 0.3 + 0.7 |e1| where Z > 0 only).

``--effect`` scales X's part of Y in every alternative (0: a null; 1: as above), so that at
many rows, where every test finds the relations above, their powers can still be told apart.

Methods: this package's ``DependenceScorer(metric).test(X, Y, Z=Z)`` with ``"dcor"`` and
``"adm"``; ``"search"``, the test a causal search asks (``ConditionalIndependence``'s, whose
distance test is asymptotic from 1,000 rows); the partial correlation test (Fisher's z of
the residuals of linear regressions on Z); causal-learn's kernel conditional independence
test (KCI, Zhang et al. 2011) and its FastKCI, and its randomized tests RCIT and RCoT
(Strobl et al. 2019: random Fourier features, for many rows; ``--methods ... rcit rcot``);
the ``bench`` extra installs causal-learn. KCI is skipped beyond 2,000 rows, where its
n x n kernels take minutes. From
10,000 rows ``"dcor"`` is the asymptotic test (doc/design/asymptotic-conditional-test).
"""

import argparse
import time
import warnings

import numpy as np
from scipy import stats

from sklearn_adm import DependenceScorer

NULLS = ("null", "null-het", "null-2d", "null-3z", "null-t", "null-discrete", "null-multi")
SAME_AT_EVERY_Z = ("linear", "squared", "collider", "variance", "checker")
CHANGING_WITH_Z = ("cos", "product", "sign", "variance-z")
CASES = NULLS + SAME_AT_EVERY_Z + CHANGING_WITH_Z
#: rows beyond which KCI is not run (its kernels are n x n, its cost cubic)
_KCI_ROWS = 2000


def draw(case, n, rng, effect=1.0):
    """``X``, ``Y``, ``Z`` of one case, each ``(n, columns)``; ``effect`` scales the part of
    Y that X drives in the alternatives (the nulls have none)."""
    if case in CHANGING_WITH_Z:
        return _changing_with_z(case, n, rng, effect)
    e1, e2, e3 = rng.normal(size=(3, n))
    if case == "null-discrete":
        z = rng.integers(0, 5, size=n).astype(float)
        return (z + e1)[:, None], ((z - 2) ** 2 + (1 + z / 4) * e2)[:, None], z[:, None]
    if case == "null-3z":
        z = rng.normal(size=(n, 3))
        x = np.tanh(z.sum(axis=1)) + 0.3 * e1
        y = z[:, 0] * z[:, 1] + np.sin(z[:, 2]) + 0.3 * e2
        return x[:, None], y[:, None], z
    z = rng.uniform(-1, 1, size=(n, 2 if case == "null-2d" else 1))
    t = z[:, 0]
    if case == "collider":
        return e1[:, None], e2[:, None], (e1 + effect * e2 + 0.5 * e3)[:, None]
    if case == "null-het":
        x, y = t + 0.5 * np.abs(t) * e1, t**2 + 0.5 * np.abs(t) * e2
    elif case == "null-2d":
        x, y = np.tanh(z[:, 0] + z[:, 1]) + 0.3 * e1, z[:, 0] * z[:, 1] + 0.3 * e2
    elif case == "null-t":
        x, y = t + 0.3 * rng.standard_t(3, size=n), np.sin(3 * t) + 0.3 * rng.standard_t(3, size=n)
    elif case == "null-multi":
        x = np.c_[np.sin(3 * t) + 0.3 * e1, t**2 + 0.3 * e3]
        y = np.c_[np.cos(4 * t) + 0.3 * e2, t + 0.3 * rng.normal(size=n)]
        return x, y, z
    elif case == "variance":
        scale = 1 + effect * (0.8 * np.abs(e1) - 0.8)  # effect 1: 0.2 + 0.8 |e1|
        x, y = np.sin(3 * t) + 0.3 * e1, np.cos(4 * t) + 0.3 * e2 * scale
    elif case == "checker":
        signs = np.where(rng.random(n) < 0.5 + 0.25 * effect, 1.0, -1.0)
        x, y = np.sin(3 * t) + 0.3 * e1, np.cos(4 * t) + 0.3 * np.sign(e1) * np.abs(e2) * signs
    else:
        x, y = np.sin(3 * t) + 0.3 * e1, np.cos(4 * t) + 0.3 * e2
        if case == "linear":
            y = y + 0.3 * effect * x
        elif case == "squared":
            x, y = x + 0.3 * e3, y + 0.3 * effect * e3**2
    return x[:, None], y[:, None], z


def _changing_with_z(case, n, rng, effect):
    z, e1, e2 = rng.normal(size=(3, n))
    x = z + e1
    if case == "cos":
        y = z + 0.6 * effect * np.cos(2 * x) + 0.5 * e2
    elif case == "product":
        y = 0.5 * effect * x * z + e2
    elif case == "sign":
        y = 0.5 * effect * np.sign(z) * e1 + e2
    else:  # variance-z
        y = z + e2 * np.where(z > 0, 1 + effect * (0.7 * np.abs(e1) - 0.7), 1.0)
    return x[:, None], y[:, None], z[:, None]


def partial_correlation(x, y, z):
    """Fisher's z test of the first canonical correlation of the residuals of x and y given z
    (linear regressions)."""
    design = np.column_stack([np.ones(len(z)), z])
    rx, ry = (a - design @ np.linalg.lstsq(design, a, rcond=None)[0] for a in (x, y))
    r = np.linalg.svd(np.linalg.qr(rx)[0].T @ np.linalg.qr(ry)[0], compute_uv=False)[0]
    statistic = np.sqrt(len(x) - z.shape[1] - 3) * np.arctanh(np.clip(r, -0.999999, 0.999999))
    return 2 * stats.norm.sf(abs(statistic))


def causal_learn(name, **options):
    def test(x, y, z):
        from causallearn.utils.cit import CIT

        data = np.column_stack([x, y, z])
        p, q = x.shape[1], y.shape[1]
        columns = [list(range(p)), list(range(p, p + q)), list(range(p + q, data.shape[1]))]
        if p == q == 1:
            columns[:2] = [0, p]
        return CIT(data, name, **options)(*columns)

    return test


def in_a_search(x, y, z, seed):
    """The test a causal search asks: ``ConditionalIndependence``'s, with its defaults (the
    asymptotic null from 1,000 rows, the early stop, the sample first)."""
    from sklearn_adm.causal import ConditionalIndependence

    data = np.column_stack([x, y, z])
    p, q = x.shape[1], y.shape[1]
    columns = list(range(data.shape[1]))
    tests = ConditionalIndependence(data, random_state=seed)
    return tests.pvalue(columns[:p], columns[p : p + q], columns[p + q :])


def method(name, seed):
    if name in ("dcor", "adm"):
        scorer = DependenceScorer(name, max_samples=None, random_state=seed)
        return lambda x, y, z: scorer.test(x, y, Z=z).pvalue
    if name == "search":
        return lambda x, y, z: in_a_search(x, y, z, seed)
    if name in ("kci", "fastkci", "rcit"):
        return causal_learn(name)
    if name == "rcot":  # RCIT's faster variant, which leaves Z out of the test of the residuals
        return causal_learn("rcit", rcit=False)
    return {"partial-correlation": partial_correlation}[name]


def rejected_and_seconds(name, draws):
    """A table cell: the share of ``draws`` (``(x, y, z)`` triples) that method ``name``
    rejects at 0.05, each with its draw's index as seed, and its mean seconds per test."""
    start, p_values = time.perf_counter(), []
    for seed, (x, y, z) in enumerate(draws):
        p_values.append(method(name, seed)(x, y, z))
    seconds = (time.perf_counter() - start) / len(draws)
    return f"{np.mean(np.array(p_values) <= 0.05):>8.3f} {seconds:>7.3f} s/test"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[600, 2000])
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument(
        "--methods", nargs="+", default=["dcor", "adm", "partial-correlation", "kci", "fastkci"]
    )
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    parser.add_argument(
        "--effect", type=float, default=1.0, help="scale of X's part of Y in the alternatives"
    )
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    print(f"{'case':<14} {'n':>6} " + " ".join(f"{m:>22}" for m in args.methods))
    for n in args.n:
        for case in args.cases:
            rng = np.random.default_rng(0)
            draws = [draw(case, n, rng, args.effect) for _ in range(args.repeats)]
            cells = []
            for name in args.methods:
                if name == "kci" and n > _KCI_ROWS:
                    cells.append(f"{'(not run)':>22}")
                    continue
                cells.append(rejected_and_seconds(name, draws))
            print(f"{case:<14} {n:>6} " + " ".join(cells), flush=True)


if __name__ == "__main__":
    main()
