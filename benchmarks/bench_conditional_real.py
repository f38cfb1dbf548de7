"""The conditional test on real embeddings: level and power where Z and X are real columns.

Usage: python benchmarks/bench_conditional_real.py PATH [--rows 10000] [--repeats 200]
           [--z-columns 1 2 3] [--methods dcor rcit rcot] [--effect 0.1]

``PATH`` is an ``.npz`` of sentence embeddings (``X``, one row a text) made by
``make_embeddings.py``, e.g. ``--corpus packages --per-label 400`` (about 15,000 one-line
summaries of Debian packages). Its rows are rotated to their principal components, each
standardised; Z is the first ``k`` of them (``--z-columns``) and X the next one, so that
X depends on Z in whatever way the embeddings do (clusters, curved and uneven densities).
Each draw takes ``--rows`` rows without replacement and builds Y:

- ``real-null``: ``Y = tanh(Z w) + (Z w')^2 / 2 + 0.5 e``, with ``w``, ``w'`` random unit
  directions and ``e`` Gaussian noise: Y depends on Z alone, X is independent of Y given Z;
- ``real-cos``: the same plus ``effect * cos(2 X)``;
- ``real-sign``: the same plus ``effect * sign(Z_1) * X``, a slope that turns with Z;
- ``real-next``: Y is the component after X, both real: whether they are independent given
  Z is not known, the share of draws rejected says what each test finds.

The table gives the share of draws rejected at 0.05 and the seconds per test; every method
tests the same draws. The methods are those of ``bench_conditional.py``.
"""

import argparse
import warnings

import numpy as np
from bench_conditional import rejected_and_seconds

CASES = ("real-null", "real-cos", "real-sign", "real-next")


def components(path):
    """The embeddings' rows in the basis of their principal components, standardised."""
    X = np.load(path)["X"].astype(np.float64)
    X -= X.mean(axis=0)
    _, _, Vt = np.linalg.svd(X, full_matrices=False)
    scores = X @ Vt.T
    return scores / scores.std(axis=0)


def draw(case, scores, k, rows, rng, effect):
    """``X``, ``Y``, ``Z`` of one case from ``rows`` rows of ``scores`` drawn at random."""
    sample = scores[rng.choice(len(scores), size=rows, replace=False)]
    z, x = sample[:, :k], sample[:, k]
    if case == "real-next":
        return x[:, None], sample[:, k + 1 : k + 2], z
    w, w2 = rng.normal(size=(2, k))
    w, w2 = w / np.linalg.norm(w), w2 / np.linalg.norm(w2)
    y = np.tanh(z @ w) + 0.5 * (z @ w2) ** 2 + 0.5 * rng.normal(size=rows)
    if case == "real-cos":
        y = y + effect * np.cos(2 * x)
    elif case == "real-sign":
        y = y + effect * np.sign(z[:, 0]) * x
    return x[:, None], y[:, None], z


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path")
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--z-columns", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--methods", nargs="+", default=["dcor", "rcit", "rcot"])
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    parser.add_argument("--effect", type=float, default=0.1)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    scores = components(args.path)
    print(f"{len(scores)} rows; {args.rows} drawn each time; effect {args.effect}")
    print(f"{'case':<10} {'Z':>2} " + " ".join(f"{m:>22}" for m in args.methods))
    for k in args.z_columns:
        for case in args.cases:
            rng = np.random.default_rng(0)
            draws = [
                draw(case, scores, k, args.rows, rng, args.effect) for _ in range(args.repeats)
            ]
            cells = [rejected_and_seconds(name, draws) for name in args.methods]
            print(f"{case:<10} {k:>2} " + " ".join(cells), flush=True)


if __name__ == "__main__":
    main()
