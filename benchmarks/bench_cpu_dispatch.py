"""The same seeded fits as three CPUs would compute them: this CPU's kernels, an AVX2 CPU's
without AVX-512, and a CPU's without AVX (``.ci/as-cpu``), each in a fresh process, with this
CPU's fit repeated in a second process. How far the fits travel: the largest difference of
the transforms from this CPU's (relative to the components' unit scale), the digits they
share, the largest angles between matched components and between the spans, and each fit's
quality.

Usage: python benchmarks/bench_cpu_dispatch.py [--levels native avx2 default]

Fits: PICA(2) on the paper's example (10,000 rows), PICA(8) and ICA(8) on digits,
NonlinearPICA(2) on the nonlinear mixture (5,000 rows), each with ``random_state=0``, and the
scorer's distance correlation and learned estimate of one matrix.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
from scipy.optimize import linear_sum_assignment

ROOT = Path(__file__).resolve().parents[1]


def fits():
    """Each fit's name, transform of held-out rows, and quality figure."""
    from sklearn.datasets import load_digits

    from sklearn_adm import ICA, PICA, DependenceScorer, NonlinearPICA
    from sklearn_adm.datasets import make_nonlinear_mixture, make_pca_vs_pica

    X, _ = make_pca_vs_pica(12_000, random_state=0)
    pica = PICA(n_components=2, random_state=0).fit(X[:10_000])
    chosen = np.abs(pica.components_).argmax(axis=1).tolist()
    yield "PICA(2), paper's example", pica.transform(X[10_000:]), f"features kept {chosen}"

    digits = load_digits().data
    for model in (PICA(8, random_state=0), ICA(8, random_state=0)):
        model.fit(digits[:1500])
        Z = model.transform(digits[1500:])
        score = DependenceScorer().score(Z)
        yield f"{type(model).__name__}(8), digits", Z, f"held-out dCor {score:.4f}"

    X, _ = make_nonlinear_mixture(6_000, random_state=0)
    model = NonlinearPICA(n_components=2, random_state=0).fit(X[:5_000])
    Z = model.transform(X[5_000:])
    yield "NonlinearPICA(2), mixture", Z, f"held-out dCor {DependenceScorer().score(Z):.4f}"

    Z = np.random.default_rng(0).standard_normal((2_000, 8))
    Z[:, 1] += Z[:, 0] ** 2
    for metric in ("dcor", "adm"):
        score = DependenceScorer(metric, random_state=0).score(Z)
        yield f"DependenceScorer({metric!r})", np.array([[score]]), f"score {score:.6f}"


def worker(path):
    warnings.simplefilter("ignore")
    names, arrays, quality = [], [], []
    for name, Z, figure in fits():
        names.append(name)
        arrays.append(Z)
        quality.append(figure)
    np.savez(path, names=names, quality=quality, **{f"Z{i}": Z for i, Z in enumerate(arrays)})


def run(level, path):
    command = [str(ROOT / ".ci" / "as-cpu"), level, sys.executable, __file__, "--worker", path]
    env = {**os.environ, "AS_CPU_PYTHON": sys.executable}
    subprocess.run(command, check=True, env=env)
    with np.load(path) as saved:
        count = len(saved["names"])
        return saved["names"], saved["quality"], [saved[f"Z{i}"] for i in range(count)]


def compare(reference, other):
    """How far ``other``'s held-out transform is from ``reference``'s: each component matched
    to the reference's it is most parallel to (order and sign are free), then the largest
    difference relative to the column's spread, its digits, the largest angle between
    matched components and the largest principal angle between the spans (degrees)."""
    if len(reference) == 1:  # a score
        worst = float(np.abs(other - reference).max() / np.abs(reference).max())
        return worst, np.inf if worst == 0 else -np.log10(worst), np.nan, np.nan
    unit = [Z / np.linalg.norm(Z - Z.mean(axis=0), axis=0) for Z in (reference, other)]
    centred = [U - U.mean(axis=0) for U in unit]
    cosines = centred[0].T @ centred[1]
    rows, columns = linear_sum_assignment(-np.abs(cosines))
    signs = np.sign(cosines[rows, columns])
    matched = other[:, columns] * signs
    difference = np.abs(matched - reference[:, rows]).max(axis=0) / reference.std(axis=0)[rows]
    worst = float(difference.max())
    angle = np.degrees(np.arccos(np.clip(np.abs(cosines[rows, columns]).min(), 0, 1)))
    spans = [np.linalg.qr(C)[0] for C in centred]
    principal = np.linalg.svd(spans[0].T @ spans[1], compute_uv=False).min()
    span_angle = np.degrees(np.arccos(np.clip(principal, 0, 1)))
    return worst, np.inf if worst == 0 else -np.log10(worst), float(angle), float(span_angle)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", nargs="+", default=["native", "avx2", "default"])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.worker)
    with tempfile.TemporaryDirectory() as folder:
        runs = {}
        for level in ["native", *args.levels]:
            key = level if level not in runs else f"{level} again"
            runs[key] = run(level, os.path.join(folder, f"{len(runs)}.npz"))
    names, _, reference = runs["native"]
    header = f"{'fit':28s} {'CPU':14s} {'max |dZ|/sd':>12s} {'digits':>7s}"
    print(f"{header} {'angle':>8s} {'span':>8s}  quality")
    for i, name in enumerate(names):
        for key, (_, quality, arrays) in runs.items():
            worst, digits, angle, span = compare(reference[i], arrays[i])
            print(
                f"{name:28s} {key:14s} {worst:12.2e} {digits:7.1f} {angle:7.3f}° {span:7.3f}°"
                f"  {quality[i]}"
            )
    return None


if __name__ == "__main__":
    main()
