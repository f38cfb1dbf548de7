"""The variables of a data table as the conditional test reads them: each one float block
(numbers as they are, an unordered category as one indicator column per category), and the
rows where it is missing."""

import numpy as np
from sklearn.utils.validation import check_array


class Table:
    """``data`` (an array-like or a :class:`pandas.DataFrame`) as float blocks, one per
    variable, NaN where a value is missing.

    - numbers and booleans: one column, as they are (an integer variable is ordered: its
      values are numbers);
    - an ordered :class:`pandas.CategoricalDtype`: its codes, one column;
    - an unordered category, or strings: one indicator column per category (an unordered
      category is not a number: every two categories are as far apart).

    Variables are named by the DataFrame's column labels, or by their positions for an array.
    """

    def __init__(self, data):
        if _is_dataframe(data):
            self.names = list(data.columns)
            self._blocks = [_block(data[name], name) for name in self.names]
        else:
            array = check_array(
                data, dtype=np.float64, ensure_all_finite="allow-nan", ensure_min_samples=4
            )
            self.names = list(range(array.shape[1]))
            self._blocks = [array[:, [j]] for j in self.names]
        if len(self.names) < 2:
            raise ValueError(f"The data need at least 2 variables, got {len(self.names)}.")
        self.n_samples = len(self._blocks[0])
        self._index = {name: j for j, name in enumerate(self.names)}
        self._missing = [np.isnan(block).any(axis=1) for block in self._blocks]
        for block in self._blocks:  # handed to every test as they are: nothing may write
            block.flags.writeable = False

    def variable(self, name):
        """The position of the variable ``name`` (a label, or a position of an array)."""
        try:
            return self._index[name]
        except (KeyError, TypeError):
            raise ValueError(
                f"Unknown variable {name!r}; the data have {_listed(self.names)}."
            ) from None

    def block(self, j):
        """Variable ``j``'s float block ``(n_samples, k)``, NaN where it is missing."""
        return self._blocks[j]

    def missing(self, j):
        """Where variable ``j`` is missing: a bool per row."""
        return self._missing[j]


def _is_dataframe(data):
    """Whether ``data`` is a pandas DataFrame, without importing pandas (not a dependency)."""
    return type(data).__module__.startswith("pandas") and hasattr(data, "columns")


def _block(column, name):
    import pandas as pd
    from pandas.api.types import (
        is_bool_dtype,
        is_numeric_dtype,
        is_object_dtype,
        is_string_dtype,
    )

    dtype = column.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        codes = column.cat.codes.to_numpy()
        if dtype.ordered:
            return np.where(codes < 0, np.nan, codes).astype(np.float64)[:, None]
        return _indicators(codes, len(dtype.categories))
    if is_bool_dtype(dtype) or is_numeric_dtype(dtype):
        values = column.to_numpy(dtype=np.float64, na_value=np.nan)
        if np.isinf(values).any():
            raise ValueError(f"Variable {name!r} has an infinite value.")
        return values[:, None]
    if is_object_dtype(dtype) or is_string_dtype(dtype):
        codes, categories = pd.factorize(column)  # missing values: -1
        return _indicators(codes, len(categories))
    raise TypeError(
        f"Variable {name!r} has dtype {dtype}; expected numbers, booleans, strings or a "
        "pandas category."
    )


def _indicators(codes, n_categories):
    """One column per category: 1 where the row has it; NaN on every column where missing."""
    block = np.zeros((len(codes), max(n_categories, 1)))
    present = codes >= 0
    block[np.flatnonzero(present), codes[present]] = 1.0
    block[~present] = np.nan
    return block


def _listed(names, shown=10):
    listed = ", ".join(repr(name) for name in names[:shown])
    return listed + (f" and {len(names) - shown} more" if len(names) > shown else "")
