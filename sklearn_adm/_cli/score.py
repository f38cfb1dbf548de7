"""``python -m sklearn_adm score FILE``: the dependence of the columns of a file."""

import csv
import os
import sys

import numpy as np

#: cells read as a missing value (case-insensitive), as pandas reads them by default
_MISSING = {"", "na", "n/a", "nan", "null", "none", "-nan", "#n/a"}
#: the delimiter of a file by its suffix, unless --delimiter says otherwise
_DELIMITERS = {".csv": ",", ".tsv": "\t"}


def _number(cell):
    """The float of a cell, None for a missing value; raises ValueError for text."""
    cell = cell.strip()
    return None if cell.lower() in _MISSING else float(cell)


def _is_number(cell):
    try:
        _number(cell)
    except ValueError:
        return False
    return True


def _read_table(path, delimiter):
    """The header (or None) and the rows of cells of a delimited text file, read with the
    standard library's ``csv`` (quoted fields may hold the delimiter). The first row is a
    header when a column is numbers below it but not in it, or when none of its cells is a
    number."""
    with open(path, encoding="utf-8", newline="") as file:
        rows = [row for row in csv.reader(file, delimiter=delimiter) if row]
    if not rows:
        raise ValueError("the file is empty")
    first, rest = rows[0], rows[1:]
    text = [not _is_number(cell) or not cell.strip() for cell in first]
    below = [all(_is_number(row[j]) for row in rest if j < len(row)) for j in range(len(first))]
    has_header = bool(rest) and (
        all(text) or any(t and b for t, b in zip(text, below, strict=True))
    )
    return (first, rest) if has_header else (None, rows)


def _read_parquet(path):
    try:
        import pyarrow.parquet as parquet
    except ImportError as error:
        raise ValueError("reading .parquet needs pyarrow (pip install pyarrow)") from error
    table = parquet.read_table(path)
    columns = [table.column(name).to_pylist() for name in table.column_names]
    rows = [["" if v is None else str(v) for v in values] for values in zip(*columns, strict=True)]
    return [str(name) for name in table.column_names], rows


def _load(path, *, delimiter=None, index_col=None, columns=None, dropna=False):
    """A 2-D float array from a .npy, .csv, .tsv or .parquet file (any delimited text file
    with ``delimiter``), its column names, and notices for the user.

    Text columns are skipped with a notice (or chosen by name with ``columns``); an index
    column is dropped: ``index_col`` (a name, or a 0-based position as pandas counts), or a
    first column with an empty header, as pandas writes its index; a missing value is an
    error naming its row and column (both 1-based), or its row is dropped with ``dropna``.
    """
    suffix = os.path.splitext(path)[1].lower()
    if suffix == ".npy":
        Z = np.load(path, allow_pickle=False)
        return Z, [str(j) for j in range(Z.shape[1] if Z.ndim == 2 else 1)], []
    if suffix == ".parquet":
        header, rows = _read_parquet(path)
    elif suffix in _DELIMITERS or delimiter is not None:
        header, rows = _read_table(path, delimiter or _DELIMITERS[suffix])
    else:
        raise ValueError("expected a .npy, .csv, .tsv or .parquet file (or pass --delimiter)")
    width = max(len(row) for row in rows)
    if any(len(row) != width for row in rows) or (header is not None and len(header) != width):
        raise ValueError("the rows do not all have the same number of fields")
    names = [name.strip() for name in header] if header else [str(j) for j in range(width)]
    notices = []
    keep = list(range(width))
    if index_col is not None:
        index = names.index(index_col) if index_col in names else _position(index_col, width)
        keep.remove(index)
        notices.append(f"column {names[index]!r} is the index: not scored")
    elif header is not None and names[0] == "" and width > 1:
        keep.remove(0)
        notices.append("the first column has no name (an index, as pandas writes it): not scored")
    if columns is not None:
        unknown = [name for name in columns if name not in names]
        if unknown:
            raise ValueError(
                f"no column named {', '.join(map(repr, unknown))}; the columns are "
                f"{', '.join(map(repr, names))}"
            )
        keep = [names.index(name) for name in columns]
    numeric = [j for j in keep if all(_is_number(row[j]) for row in rows)]
    for j in keep:
        if j not in numeric:
            if columns is not None:
                raise ValueError(f"column {names[j]!r} is not numeric")
            notices.append(f"column {names[j]!r} is not numeric: skipped")
    if not numeric:
        raise ValueError("no numeric column to score")
    values = np.array([[_number(row[j]) for j in numeric] for row in rows], dtype=float)
    missing = np.isnan(values)
    if missing.any():
        if not dropna:
            row, column = (int(k[0]) for k in np.nonzero(missing))
            line = row + 1 + (header is not None)
            raise ValueError(
                f"missing value in row {row + 1} (line {line} of the file), column "
                f"{names[numeric[column]]!r} (column {numeric[column] + 1}); pass --dropna to "
                "drop the rows with missing values"
            )
        complete = ~missing.any(axis=1)
        notices.append(f"dropped {int((~complete).sum())} rows with missing values")
        values = values[complete]
    return values, [names[j] for j in numeric], notices


def _position(index_col, width):
    try:
        position = int(index_col)
    except ValueError:
        raise ValueError(f"no column named {index_col!r} for --index-col") from None
    if not 0 <= position < width:
        raise ValueError(f"--index-col {position} is not a column position (0 to {width - 1})")
    return position


def run(args):
    from ..independence._scorer import DependenceScorer

    try:
        Z, names, notices = _load(
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
