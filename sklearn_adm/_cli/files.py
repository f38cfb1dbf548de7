"""Reading a feature matrix from a file for ``python -m sklearn_adm score``: NumPy's ``.npy``
directly, text tables and Parquet through pandas (the ``cli`` extra).

Beyond what pandas reads by itself, the command decides two things: whether a text file's
first row is a header (pandas would take any first row), and which columns are scored (the
numeric ones, less an index).
"""

import os

import numpy as np

#: the delimiter of a text file by its suffix, unless --delimiter says otherwise
DELIMITERS = {".csv": ",", ".tsv": "\t"}
#: rows below the first that show which columns hold numbers, to decide on a header
_HEADER_EVIDENCE_ROWS = 1000
#: the name pandas gives the empty header of the index column that ``to_csv`` writes
_UNNAMED_INDEX = "Unnamed: 0"


def read_matrix(path, *, delimiter=None, index_col=None, columns=None, dropna=False):
    """The numeric columns of a file as a 2-D float array, their names, and notices.

    Parameters
    ----------
    path : str
        A ``.npy``, ``.csv``, ``.tsv`` or ``.parquet`` file, or any delimited text file
        with ``delimiter``.
    delimiter : str, default=None
        Of a text file; by default ``,`` or a tab for ``.tsv``.
    index_col : str, default=None
        The index column, by name or 0-based position: not scored. A first column with an
        empty header, as pandas writes its index, is taken as the index unless named.
    columns : list of str, default=None
        Score only these columns, by name (each must be numeric).
    dropna : bool, default=False
        Drop the rows with a missing value instead of refusing them.

    Returns
    -------
    values : ndarray of shape (n_rows, n_columns)
    names : list of str
    notices : list of str
        What was left out, and why.

    Raises
    ------
    ValueError
        For a file that holds no numeric column, a missing value (naming its row and column),
        an unknown or text column asked for, or a missing reader (pandas, pyarrow).
    """
    suffix = os.path.splitext(path)[1].lower()
    if suffix == ".npy":
        values = np.load(path, allow_pickle=False)
        n_columns = values.shape[1] if values.ndim == 2 else 1
        return values, [str(j) for j in range(n_columns)], []
    if suffix == ".parquet":
        frame, header_rows = _read_parquet(path), None  # no lines to name
    elif suffix in DELIMITERS or delimiter is not None:
        frame, header_rows = _read_text(path, delimiter or DELIMITERS[suffix])
    else:
        raise ValueError("expected a .npy, .csv, .tsv or .parquet file (or pass --delimiter)")
    frame.columns = [str(name).strip() for name in frame.columns]
    positions, notices = _scored_columns(frame, index_col, columns)
    names = [frame.columns[j] for j in positions]
    values = frame.iloc[:, positions].to_numpy(dtype=np.float64, na_value=np.nan)
    missing = np.isnan(values)
    if missing.any():
        if not dropna:
            row, column = (int(k[0]) for k in np.nonzero(missing))
            line = "" if header_rows is None else f" (line {row + 1 + header_rows} of the file)"
            raise ValueError(
                f"missing value in row {row + 1}{line}, column {names[column]!r} "
                f"(column {positions[column] + 1}); pass --dropna to drop the rows with "
                "missing values"
            )
        complete = ~missing.any(axis=1)
        notices.append(f"dropped {int((~complete).sum())} rows with missing values")
        values = values[complete]
    return values, names, notices


def _pandas(suffix):
    """pandas, or a ValueError that says how to install it."""
    try:
        import pandas
    except ImportError:
        raise ValueError(
            f"reading a {suffix} file needs pandas: pip install 'sklearn-adm[cli]'"
        ) from None
    return pandas


def _read_text(path, delimiter):
    """A delimited text file as a DataFrame, and the number of header rows (0 or 1). The first
    row is a header when a column holds numbers below it but not in it, or when none of its
    cells is a number."""
    pd = _pandas(os.path.splitext(path)[1].lower() or "text")
    try:
        first = pd.read_csv(path, sep=delimiter, header=None, nrows=1, dtype=str).iloc[0]
        try:
            below = pd.read_csv(
                path, sep=delimiter, header=None, skiprows=1, nrows=_HEADER_EVIDENCE_ROWS
            )
        except pd.errors.EmptyDataError:  # one row only: no header
            below = pd.DataFrame()
        text = pd.to_numeric(first, errors="coerce").isna().to_numpy()
        numbers_below = np.array(
            [j in below and pd.api.types.is_numeric_dtype(below[j]) for j in first.index]
        )
        if len(below) == 0 and text.all():
            raise ValueError("the file has a header and no rows")
        header = len(below) > 0 and bool(text.all() or (text & numbers_below).any())
        frame = pd.read_csv(path, sep=delimiter, header=0 if header else None)
    except pd.errors.EmptyDataError:
        raise ValueError("the file is empty") from None
    except pd.errors.ParserError as error:
        message = str(error).strip().removeprefix("Error tokenizing data. C error: ")
        raise ValueError(message) from None
    return frame, int(header)


def _read_parquet(path):
    pd = _pandas(".parquet")
    try:
        return pd.read_parquet(path)
    except ImportError:
        raise ValueError(
            "reading a .parquet file needs pyarrow: pip install 'sklearn-adm[cli]'"
        ) from None


def _scored_columns(frame, index_col, columns):
    """The 0-based positions of the columns to score, and notices of what was left out."""
    names, notices = list(frame.columns), []
    keep = list(range(len(names)))
    if index_col is not None:
        index = names.index(index_col) if index_col in names else _position(index_col, names)
        keep.remove(index)
        notices.append(f"column {names[index]!r} is the index: not scored")
    elif names[0] == _UNNAMED_INDEX and len(names) > 1:
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
    numeric = []
    for j in keep:
        if _is_numeric(frame.iloc[:, j]):
            numeric.append(j)
        elif columns is not None:
            raise ValueError(f"column {names[j]!r} is not numeric")
        else:
            notices.append(f"column {names[j]!r} is not numeric: skipped")
    if not numeric:
        raise ValueError("no numeric column to score")
    return numeric, notices


def _is_numeric(column):
    """Numbers or booleans, and missing values (which are refused or dropped later)."""
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    return is_numeric_dtype(column) or is_bool_dtype(column)


def _position(index_col, names):
    try:
        position = int(index_col)
    except ValueError:
        raise ValueError(f"no column named {index_col!r} for --index-col") from None
    if not 0 <= position < len(names):
        raise ValueError(f"--index-col {position} is not a column position (0 to {len(names) - 1})")
    return position
