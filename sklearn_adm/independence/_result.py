"""What :class:`~sklearn_adm.DependenceScorer` returns: the test's result, and values per
column labelled with the columns' names."""

from dataclasses import dataclass

import numpy as np
from sklearn import get_config


@dataclass(frozen=True)
class DependenceTestResult:
    """The result of :meth:`DependenceScorer.test`.

    Attributes
    ----------
    statistic : float, ndarray or pandas.Series
        The dependence estimated on the data: per column for ``test(Z)``, one number for
        ``test(X, Y)``.
    pvalue : float, ndarray or pandas.Series
        The permutation p-value(s), at least ``1 / (n_permutations + 1)``; for the
        asymptotic conditional test, the limit distribution's tail.
    null_mean : float, ndarray or pandas.Series
        The mean estimate over the permutations: the estimator's floor, the value it gives
        to independent data of the same marginals and size.
    n_permutations : int
        Permutations drawn (0 for the asymptotic conditional test).
    method : str
        How the p-value was found: ``"permutation"`` (Y's rows, or each column, shuffled
        among all rows), ``"permutation, random projections"`` (two multivariate samples of
        many rows: the statistic over random one-dimensional projections of each, in memory
        linear in the rows), ``"local permutation"`` (given Z: Y's rows shuffled within
        groups of nearly equal Z) or ``"asymptotic, random frequencies"`` (given Z, from
        many rows: the covariance, within groups of nearly equal Z, of features of the
        residuals' characteristic functions, against its Gaussian limit).
    n_dropped : int
        Rows left out for a missing value in the tested variables
        (:class:`sklearn_adm.causal.ConditionalIndependence` with ``missing="drop"``).
    """

    statistic: object
    pvalue: object
    null_mean: object
    n_permutations: int
    method: str = "permutation"
    n_dropped: int = 0


def two_sample_result(statistic, p_value, null_mean, drawn, method):
    """The result of a test of two samples, in Python floats."""
    return DependenceTestResult(float(statistic), float(p_value), float(null_mean), drawn, method)


def column_names(Z):
    """The names of the columns of ``Z`` where the results should carry them: a DataFrame's
    columns (as strings), or ``x0, x1, ...`` under scikit-learn's ``transform_output="pandas"``;
    else None."""
    if hasattr(Z, "columns"):
        return [str(name) for name in Z.columns]
    if get_config()["transform_output"] == "pandas":
        return [f"x{j}" for j in range(np.shape(Z)[1])]
    return None


def labelled(values, names, name):
    """``values`` per column as a pandas Series indexed by ``names`` (as they are if None)."""
    if names is None:
        return values
    import pandas as pd

    return pd.Series(values, index=names, name=name)
