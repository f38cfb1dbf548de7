"""pgmpy's conditional test interface on :class:`ConditionalIndependence`."""

from ._engine import ConditionalIndependence


class PgmpyTest:
    """sklearn-adm's conditional test for pgmpy's constraint-based searches.

    pgmpy's ``PC(ci_test=...).fit(data)`` (``pgmpy.causal_discovery``) calls a test with
    the variables' names, the conditioning set and the significance level, and reads whether
    the variables are independent (and ``p_value_``, ``effect_size_``); so the test is made
    with the data it reads. The older ``pgmpy.estimators.PC(data).estimate(ci_test=...)``
    passes the data at each call, which takes precedence. One :class:`ConditionalIndependence`
    serves every test on one DataFrame, with its shared work. An unordered category is read
    as one indicator per category.

    Parameters
    ----------
    data : pandas.DataFrame or None, default=None
        The data the tests read (the variables are its columns); None where every call
        passes ``data``.
    metric : {"dcor", "dcor_sq", "pearson", "adm"}, default="dcor"
        The statistic, as in :class:`~sklearn_adm.DependenceScorer`.
    **params
        Any other parameter of :class:`ConditionalIndependence` (``n_permutations``,
        ``early_stop``, ``missing``, ``random_state``, ...).

    Attributes
    ----------
    statistic_, p_value_, effect_size_ : float
        Of the last test, as pgmpy's tests set them (the effect size is the statistic).

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from pgmpy.causal_discovery import PC
    >>> from sklearn_adm.causal import PgmpyTest
    >>> rng = np.random.default_rng(0)
    >>> a = rng.normal(size=1000)
    >>> b = np.sin(2 * a) + 0.3 * rng.normal(size=1000)
    >>> c = b**2 + 0.3 * rng.normal(size=1000)
    >>> data = pd.DataFrame({"a": a, "b": b, "c": c})
    >>> search = PC(ci_test=PgmpyTest(data), variant="stable", show_progress=False)
    >>> sorted(tuple(sorted(edge)) for edge in search.fit(data).skeleton_.edges())
    [('a', 'b'), ('b', 'c')]
    """

    def __init__(self, data=None, metric="dcor", **params):
        self.metric = metric
        self.params = params
        self._data = self._tests = None
        if data is not None:
            self._tests_of(data)

    def __call__(self, X, Y, Z=(), significance_level=0.05, data=None, boolean=True, **kwargs):
        """Test ``X`` against ``Y`` given ``Z``: with ``boolean``, whether the p-value is at
        least ``significance_level`` (independent); otherwise ``(statistic, p_value)``.
        ``data`` replaces the data where given; other keywords (pgmpy's ``independencies``)
        are ignored."""
        statistic, p_value = self.run_test(X, Y, Z, data=data)
        return p_value >= significance_level if boolean else (statistic, p_value)

    def run_test(self, X, Y, Z=(), data=None):
        """``(statistic, p_value)`` of the test of ``X`` against ``Y`` given ``Z``."""
        tests = self._tests_of(data)
        result = tests.test(X, Y, list(Z))
        self.statistic_ = self.effect_size_ = result.statistic
        self.p_value_ = result.pvalue
        return self.statistic_, self.p_value_

    def _tests_of(self, data):
        if data is not None and data is not self._data:
            self._data = data
            self._tests = ConditionalIndependence(data, metric=self.metric, **self.params)
        if self._tests is None:
            raise ValueError("A PgmpyTest needs the data it tests: PgmpyTest(data).")
        return self._tests
