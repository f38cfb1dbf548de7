"""Command line of sklearn-adm.

python -m sklearn_adm demo                 PCA vs FastICA vs PICA on the paper's example
python -m sklearn_adm score FILE [options]  dependence of the columns of a .npy or .csv file
"""

import argparse
import sys

import numpy as np


def _load(path):
    """A 2-D float array from a .npy or .csv file (a header row in a CSV is skipped)."""
    if path.endswith(".npy"):
        return np.load(path, allow_pickle=False)
    if path.endswith(".csv"):
        try:
            return np.loadtxt(path, delimiter=",", ndmin=2)
        except ValueError:
            return np.loadtxt(path, delimiter=",", ndmin=2, skiprows=1)
    raise ValueError("expected a .npy or .csv file")


def _score(args):
    from ._scorer import DependenceScorer

    try:
        Z = _load(args.file)
    except (OSError, ValueError) as error:
        print(f"sklearn_adm score: cannot read {args.file!r}: {error}", file=sys.stderr)
        return 2
    max_samples = None if args.max_samples <= 0 else args.max_samples
    scorer = DependenceScorer(args.metric, max_samples=max_samples, random_state=args.seed)
    try:
        values = scorer.per_feature(Z)
    except ValueError as error:
        print(f"sklearn_adm score: {error}", file=sys.stderr)
        return 2
    print(f"{'feature':>8} {args.metric:>10}")
    for index, value in enumerate(values):
        print(f"{index:>8} {value:>10.4f}")
    print(f"{'mean':>8} {values.mean():>10.4f}")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m sklearn_adm",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="PCA vs FastICA vs PICA on the paper's example")
    demo.add_argument("--n-samples", type=int, default=10_000)
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--output", default="pica_demo.png", help="where to save the figure")
    demo.add_argument("--verbose", type=int, default=1, help="0 hides the progress bar")
    score = commands.add_parser("score", help="dependence of each column of a .npy/.csv file")
    score.add_argument("file", help="a 2-D array: .npy, or .csv with an optional header row")
    score.add_argument(
        "--metric", default="dcor", choices=["dcor", "dcor_sq", "pearson", "adm", "hgb"]
    )
    score.add_argument(
        "--max-samples", type=int, default=5000, help="rows used at most (0: all rows)"
    )
    score.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.command == "score":
        return _score(args)
    from ._demo import run

    run(args.n_samples, args.seed, args.output, args.verbose)
    return 0


if __name__ == "__main__":
    sys.exit(main())
