"""Command line of sklearn-adm.

python -m sklearn_adm demo                 PCA vs FastICA vs PICA on the paper's example
python -m sklearn_adm score FILE [options]  dependence of the columns of a .npy, .csv, .tsv or
                                            .parquet file, with --test their p-values and floors
"""

import argparse


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
    score = commands.add_parser(
        "score", help="dependence of each column of a .npy, .csv, .tsv or .parquet file"
    )
    score.add_argument(
        "file", help="a 2-D array: .npy, .parquet, or a delimited text file with a header row"
    )
    score.add_argument("--delimiter", help="of a text file (default: ',' or a tab for .tsv)")
    score.add_argument(
        "--index-col", help="the index column, by name or 0-based position: not scored"
    )
    score.add_argument("--columns", nargs="+", help="score only these columns (by name)")
    score.add_argument("--dropna", action="store_true", help="drop the rows with missing values")
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
        from .score import run as run_score

        return run_score(args)
    from .demo import run as run_demo

    run_demo(args.n_samples, args.seed, args.output, args.verbose)
    return 0
