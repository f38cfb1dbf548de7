"""Command line of sklearn-adm.

python -m sklearn_adm demo                 PCA vs FastICA vs PICA on the paper's example
python -m sklearn_adm score FILE [options]  dependence of the columns of a .npy or .csv file,
                                            with --test their p-values and floors
"""

import argparse
import sys

import numpy as np


def _load(path):
    """A 2-D float array from a .npy or .csv file, and its column names: a CSV's header row
    if it has one, else the column numbers."""
    if path.endswith(".npy"):
        Z = np.load(path, allow_pickle=False)
        return Z, [str(j) for j in range(Z.shape[1] if Z.ndim == 2 else 1)]
    if not path.endswith(".csv"):
        raise ValueError("expected a .npy or .csv file")
    try:
        Z = np.loadtxt(path, delimiter=",", ndmin=2)
        return Z, [str(j) for j in range(Z.shape[1])]
    except ValueError:
        Z = np.loadtxt(path, delimiter=",", ndmin=2, skiprows=1)
    with open(path, encoding="utf-8") as file:
        header = [name.strip() for name in file.readline().split(",")]
    if len(header) != Z.shape[1]:
        header = [str(j) for j in range(Z.shape[1])]
    return Z, header


def _score(args):
    from ._scorer import DependenceScorer

    try:
        Z, names = _load(args.file)
    except (OSError, ValueError) as error:
        print(f"sklearn_adm score: cannot read {args.file!r}: {error}", file=sys.stderr)
        return 2
    max_samples = None if args.max_samples <= 0 else args.max_samples
    scorer = DependenceScorer(args.metric, max_samples=max_samples, random_state=args.seed)
    try:
        values = scorer.per_feature(Z)
        if args.test:
            p_values, floor = scorer.test(Z, n_permutations=args.permutations)
    except ValueError as error:
        print(f"sklearn_adm score: {error}", file=sys.stderr)
        return 2
    width = max(8, *(len(name) for name in names))
    columns = [f"{'feature':>{width}} {args.metric:>10}"]
    if args.test:
        columns.append(f"{'floor':>10} {'p-value':>10}")
    print(" ".join(columns))
    for j, (name, value) in enumerate(zip(names, values, strict=True)):
        line = f"{name:>{width}} {value:>10.4f}"
        if args.test:
            line += f" {floor[j]:>10.4f} {p_values[j]:>10.4f}"
        print(line)
    summary = f"{'mean':>{width}} {values.mean():>10.4f}"
    if args.test:
        summary += f" {floor.mean():>10.4f}"
    print(summary)
    if args.test:
        print(
            f"p-value: share of {args.permutations} permutations (each column shuffled on its "
            "own) scoring at least as high; floor: their mean score."
        )
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
    score.add_argument(
        "--test", action="store_true", help="add each column's permutation p-value and floor"
    )
    score.add_argument("--permutations", type=int, default=200, help="permutations for --test")
    args = parser.parse_args(argv)
    if args.command == "score":
        return _score(args)
    from ._demo import run

    run(args.n_samples, args.seed, args.output, args.verbose)
    return 0


if __name__ == "__main__":
    sys.exit(main())
