"""Power of DependenceScorer.test next to hyppo's Dcorr and Hsic, and its level.

Usage: python benchmarks/bench_power.py [--n 100 300 1000] [--dims 1 5] [--reps 50]
       [--permutations 200] [--sims spiral circle ...] [--level-tests 500]

1. Level: the share of tests with p <= 0.05 on independent data, for every metric ``test``
   offers, two samples and columns, drawn from several marginals (normal, uniform,
   exponential, a bimodal mixture) and from hyppo's null simulation (multimodal
   independence). It should be near 0.05: within [0.03, 0.07] over 500 tests.
2. Power: for each of hyppo's 20 simulations (``hyppo.tools.indep_sim``, noise on) and
   ``ring`` (a point uniform on the unit circle plus Gaussian noise of 0.8 in each
   coordinate, x and y its two coordinates: ``--sims ring --n 1000 --dims 1``), each ``n``
   and dimension, the share of ``reps`` draws in which each test rejects at 0.05:
   ``test(x, y)`` with ``"dcor"`` and ``"adm"``, hyppo's ``Dcorr`` and ``Hsic`` (permutation
   versions, ``auto=False``, as many permutations). Writes ``bench_power.png``: power against
   n, one panel per simulation.
3. Speed: one ``"adm"`` test at n = 1,000 with 1,000 permutations.

hyppo is a benchmark-only dependency (the ``bench`` extra).
"""

import argparse
import inspect
import time
import warnings

import numpy as np

from sklearn_adm import DependenceScorer

ALPHA = 0.05
MARGINALS = {
    "normal": lambda rng, shape: rng.normal(size=shape),
    "uniform": lambda rng, shape: rng.uniform(size=shape),
    "exponential": lambda rng, shape: rng.exponential(size=shape),
    "bimodal": lambda rng, shape: rng.normal(size=shape) + 4 * rng.integers(0, 2, size=shape),
}


def ours(metric, seed):
    return DependenceScorer(metric, max_samples=None, random_state=seed)


def level(n_tests, n_permutations, indep_sim):
    """Rejection rates on independent data, per metric; the tests cycle through the forms
    (two samples, columns, hyppo's null simulation), the marginals and n = 100, 300."""
    print(f"Level at alpha = {ALPHA}: share of {n_tests} tests rejecting on independent data")
    band = 1.96 * np.sqrt(ALPHA * (1 - ALPHA) / n_tests)
    print(
        f"{'metric':>8} {'rate':>6}   per form   (a valid test: {ALPHA - band:.3f} to "
        f"{ALPHA + band:.3f} in 95 % of runs)"
    )
    forms = ("two samples", "columns", "hyppo null")
    for metric in ("dcor", "dcor_sq", "pearson", "adm"):
        rejected = dict.fromkeys(forms, 0)
        start = time.perf_counter()
        for seed in range(n_tests):
            rng = np.random.default_rng(seed)
            form, n = forms[seed % 3], (100, 300)[seed % 2]
            if form == "hyppo null":
                np.random.seed(seed)  # noqa: NPY002 (hyppo draws from the global generator)
                x, y = indep_sim("multimodal_independence", n, 1)
            else:
                draw = list(MARGINALS.values())[seed % len(MARGINALS)]
                x, y = draw(rng, (n, 1 + seed % 3)), draw(rng, (n, 1))
            if form == "columns":  # the last column's p-value: one per test, as for the others
                p = ours(metric, seed).test(np.c_[x, y], n_permutations=n_permutations).pvalue[-1]
            else:
                p = ours(metric, seed).test(x, y, n_permutations=n_permutations).pvalue
            rejected[form] += p <= ALPHA
        counts = [n_tests // 3 + (i < n_tests % 3) for i in range(3)]
        per_form = ", ".join(
            f"{form} {rejected[form] / count:.3f}"
            for form, count in zip(forms, counts, strict=True)
        )
        rate = sum(rejected.values()) / n_tests
        seconds = (time.perf_counter() - start) / n_tests
        print(f"{metric:>8} {rate:>6.3f}   {per_form}   ({seconds:.2f} s a test)", flush=True)


def ring(n, seed, noise=0.8):
    """A noisy ring: x and y the coordinates of a point uniform on the unit circle, each
    plus Gaussian noise of standard deviation ``noise``."""
    rng = np.random.default_rng(seed)
    angle = rng.uniform(0, 2 * np.pi, n)
    return (
        (np.cos(angle) + noise * rng.normal(size=n))[:, None],
        (np.sin(angle) + noise * rng.normal(size=n))[:, None],
    )


def noise(sim):
    """The noise on, for the simulations that have it (not the null, nor multiplicative
    noise, whose noise is the relation)."""
    from hyppo.tools import SIMULATIONS

    return {"noise": True} if "noise" in inspect.signature(SIMULATIONS[sim]).parameters else {}


def power(sims, sizes, dims, reps, n_permutations, indep_sim, Dcorr, Hsic):
    """Rejection rates per simulation, size, dimension and test."""
    tests = {
        "adm": lambda x, y, seed: ours("adm", seed).test(x, y, n_permutations).pvalue,
        "dcor": lambda x, y, seed: ours("dcor", seed).test(x, y, n_permutations).pvalue,
        "hyppo Dcorr": lambda x, y, seed: Dcorr().test(
            x, y, reps=n_permutations, auto=False, random_state=seed
        )[1],
        "hyppo Hsic": lambda x, y, seed: Hsic().test(
            x, y, reps=n_permutations, auto=False, random_state=seed
        )[1],
    }
    results = {}
    print(f"\nPower at alpha = {ALPHA} over {reps} draws, {n_permutations} permutations")
    print(f"{'simulation':>24} {'n':>5} {'p':>2} " + " ".join(f"{t:>11}" for t in tests))
    for sim in sims:
        for p in dims:
            for n in sizes:
                rejected = dict.fromkeys(tests, 0)
                seconds = dict.fromkeys(tests, 0.0)
                for seed in range(reps):
                    np.random.seed(seed)  # noqa: NPY002 (hyppo draws from the global generator)
                    x, y = ring(n, seed) if sim == "ring" else indep_sim(sim, n, p, **noise(sim))
                    for name, test in tests.items():
                        start = time.perf_counter()
                        rejected[name] += test(x, y, seed) <= ALPHA
                        seconds[name] += time.perf_counter() - start
                rates = {name: count / reps for name, count in rejected.items()}
                results[sim, p, n] = rates
                print(
                    f"{sim:>24} {n:>5} {p:>2} "
                    + " ".join(f"{rates[name]:>11.2f}" for name in tests)
                    + "   s/test: "
                    + " ".join(f"{seconds[name] / reps:.2f}" for name in tests),
                    flush=True,
                )
    return list(tests), results


def plot(sims, sizes, dims, names, results, output):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = 5
    rows = -(-len(sims) // columns)
    for p in dims:
        fig, axes = plt.subplots(rows, columns, figsize=(3 * columns, 2.6 * rows), squeeze=False)
        for ax, sim in zip(axes.flat, sims, strict=False):
            for name in names:
                ax.plot(sizes, [results[sim, p, n][name] for n in sizes], "o-", label=name)
            ax.set_title(sim, fontsize=9)
            ax.set_xscale("log")
            ax.set_ylim(-0.02, 1.02)
        for ax in list(axes.flat)[len(sims) :]:
            ax.axis("off")
        axes.flat[0].legend(fontsize=7)
        fig.supxlabel("n")
        fig.supylabel(f"power at alpha = {ALPHA}")
        fig.suptitle(f"dimension {p}")
        fig.tight_layout()
        path = output.replace(".png", f"_p{p}.png")
        fig.savefig(path, dpi=90)
        print(f"Figure: {path}")


def speed():
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, size=1000)
    y = np.cos(4 * np.pi * x) + rng.normal(size=1000)
    ours("adm", 0).test(x[:100], y[:100], n_permutations=10)  # imports, first allocations
    start = time.perf_counter()
    p_value = ours("adm", 0).test(x, y, n_permutations=1000).pvalue
    seconds = time.perf_counter() - start
    print(f"\nOne 'adm' test, n = 1000, 1000 permutations: {seconds:.2f} s (p = {p_value:.4f})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[100, 300, 1000])
    parser.add_argument("--dims", type=int, nargs="+", default=[1, 5])
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--permutations", type=int, default=200)
    parser.add_argument("--sims", nargs="+", default=None, help="default: all 20")
    parser.add_argument("--level-tests", type=int, default=500)
    parser.add_argument("--output", default="bench_power.png")
    args = parser.parse_args()
    try:
        from hyppo.independence import Dcorr, Hsic
        from hyppo.tools import SIMULATIONS, indep_sim
    except ImportError:
        raise SystemExit("hyppo is needed: pip install -e '.[bench]'") from None
    warnings.simplefilter("ignore", RuntimeWarning)  # hyppo's kernels on tied data
    speed()
    if args.level_tests:
        level(args.level_tests, args.permutations, indep_sim)
    sims = args.sims or list(SIMULATIONS)
    names, results = power(
        sims, args.n, args.dims, args.reps, args.permutations, indep_sim, Dcorr, Hsic
    )
    plot(sims, args.n, args.dims, names, results, args.output)


if __name__ == "__main__":
    main()
