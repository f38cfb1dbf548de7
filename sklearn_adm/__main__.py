"""Command line: ``python -m sklearn_adm demo``."""

import argparse
import sys


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m sklearn_adm", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="PCA vs FastICA vs PICA on the paper's example")
    demo.add_argument("--n-samples", type=int, default=10_000)
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--output", default="pica_demo.png", help="where to save the figure")
    demo.add_argument("--verbose", type=int, default=1, help="0 hides the progress bar")
    args = parser.parse_args(argv)
    if args.command == "demo":
        from ._demo import run

        run(args.n_samples, args.seed, args.output, args.verbose)
    return 0


if __name__ == "__main__":
    sys.exit(main())
