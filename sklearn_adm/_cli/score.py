"""``python -m sklearn_adm score FILE``: the dependence of the columns of a file."""

import sys

from .files import read_matrix


def run(args):
    from ..independence._scorer import DependenceScorer

    try:
        Z, names, notices = read_matrix(
            args.file,
            delimiter=args.delimiter,
            index_col=args.index_col,
            columns=args.columns,
            dropna=args.dropna,
        )
    except (OSError, ValueError) as error:
        print(f"sklearn_adm score: cannot read {args.file!r}: {error}", file=sys.stderr)
        return 2
    for notice in notices:
        print(f"sklearn_adm score: {notice}", file=sys.stderr)
    max_samples = None if args.max_samples <= 0 else args.max_samples
    scorer = DependenceScorer(args.metric, max_samples=max_samples, random_state=args.seed)
    try:
        values = scorer.per_feature(Z)
        if args.test:
            result = scorer.test(Z, n_permutations=args.permutations)
            p_values, floor = result.pvalue, result.null_mean
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
