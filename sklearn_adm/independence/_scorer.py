"""DependenceScorer: how dependent the columns of any feature matrix are.

The estimator validates its parameters and the data, draws the rows it reads, and hands
them to its metric's statistic (:mod:`._statistic`), which measures and tests."""

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.pipeline import Pipeline
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _num_samples, check_array

from .._data.chunked import ChunkedArray, check_chunk_sizes, is_chunked, read_rows
from .._data.scaling import magnitude, rescaled
from .._runtime.device import resolve_device
from ._conditional_test import Afresh, residuals_given
from ._critic_statistic import CRITIC_DEFAULTS, CriticStatistic
from ._distance_statistic import DistanceStatistic
from ._grouped_covariance import ASYMPTOTIC_ROWS
from ._linear_statistic import PearsonStatistic
from ._result import DependenceTestResult, column_names, labelled
from ._trees import TreesStatistic

#: rows of an out-of-core array up to which the learned estimate reads them into memory
_IN_MEMORY_ROWS = 65_536


class DependenceScorer(BaseEstimator):
    """Measure how dependent the columns of a feature matrix are; also a scikit-learn scorer.

    Parameters
    ----------
    metric : {"dcor", "dcor_sq", "pearson", "adm", "hgb"}, default="dcor"
        - ``"dcor"``: distance correlation (Székely et al. 2007), the biased V-statistic that
          ``dcor.distance_correlation`` computes, by the exact engine of
          :mod:`sklearn_adm.metrics`. 0 if and only if independent (in the population).
        - ``"dcor_sq"``: its square.
        - ``"pearson"``: the linear analogue: the multiple correlation of a column with the
          others; the absolute correlation pairwise.
        - ``"adm"``: the learned estimate: an :class:`ADMCritic` is trained on part of the
          rows and ``1 - MSE`` on the other rows, calibrated and clipped to [0, 1], estimates
          the squared maximal correlation of each column with the others. Per feature it
          is never below the held-out R^2 of a linear regression on the same rows (a lower
          bound of the squared maximal correlation that a short-trained critic can miss).
        - ``"hgb"``: a judge from another model family than the critic: the held-out R^2 of
          gradient-boosted trees (:class:`~sklearn.ensemble.HistGradientBoostingRegressor`)
          predicting each column and its square from the others, clipped to [0, 1] and
          averaged over the two targets (:func:`sklearn_adm.metrics.gradient_boosting_dependence`).
          Use it to check that a representation trained against the ADM critic did not only
          fool that critic. Pairwise, each column of a pair is predicted from the other.
          Repeated rows are atoms of the sample: a held-out copy of a training row is
          predicted exactly, whatever the representation, so they read as dependence (how
          much, on real embeddings: :doc:`/design/repeated-rows`). Drop them first
          (``np.unique(Z, axis=0)``) when they are copies of one item.
    max_samples : int or None, default=5000
        Rows used at most, drawn without replacement; None uses all rows. Distance
        correlation costs ``O(n^2 d)`` time (memory ``O(n d)``), but ``O(n log n)`` for
        one-dimensional columns (``pairwise`` and two one-dimensional samples), where None
        is cheap at a million rows. Of a memory-mapped or Dask array only these rows are
        read.
    random_state : int, RandomState instance or None, default=None
        Seeds the row subsample, and for ``"adm"`` the split and the critic. An int gives
        the same result to the bit on one machine and one number of threads; ``"adm"``'s
        critic trains otherwise on another CPU, to an estimate of the same quality.
    critic_params : dict or None, default=None
        For ``"adm"``: any of ``critic_hidden`` (32), ``probe_hidden`` (16), ``probes``
        (True; False detects dependence of the conditional mean only), ``predictor_rank``
        (None; an int ``r`` gives the predictors a first layer of rank ``r``: the critic's
        memory grows as ``d * r`` instead of ``d**2``, see :class:`ADMCritic`), ``max_iter`` (500
        critic updates; 2,000 in :meth:`test`, whose power rests on how well the critic fits
        the relation), ``batch_size`` (512), ``critic_learning_rate`` (0.02) and
        ``validation_fraction`` (0.3, the rows held out for the estimate; 0.5 in
        :meth:`test`).
    device : str, default="auto"
        "auto", "cpu", "cuda", "cuda:N" or "mps": where ``"adm"`` trains, and where the
        one-against-the-rest distance correlation runs (torch, float64) when it is not the
        CPU (there, a numba kernel).

    See Also
    --------
    sklearn_adm.metrics.distance_correlation_one_vs_rest : The engine behind ``"dcor"``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_adm import DependenceScorer
    >>> rng = np.random.default_rng(0)
    >>> x = rng.uniform(-1, 1, size=1000)
    >>> Z = np.c_[x, x**2, rng.uniform(size=1000)]
    >>> DependenceScorer().per_feature(Z).round(2)
    array([0.4 , 0.42, 0.04])
    >>> DependenceScorer(metric="pearson").per_feature(Z).round(2)
    array([0.03, 0.03, 0.01])
    >>> DependenceScorer(metric="adm", random_state=0).per_feature(Z).round(1)
    array([1., 1., 0.])
    """

    _parameter_constraints: dict = {
        "metric": [StrOptions({"dcor", "dcor_sq", "pearson", "adm", "hgb"})],
        "max_samples": [Interval(Integral, 2, None, closed="left"), None],
        "random_state": ["random_state"],
        "critic_params": [dict, None],
        "device": [str],
    }

    def __init__(
        self,
        metric="dcor",
        *,
        max_samples=5000,
        random_state=None,
        critic_params=None,
        device="auto",
    ):
        self.metric = metric
        self.max_samples = max_samples
        self.random_state = random_state
        self.critic_params = critic_params
        self.device = device

    def _statistic(self):
        """The metric's statistic: the one place where the metric is read."""
        if self.metric in ("dcor", "dcor_sq"):
            return DistanceStatistic(squared=self.metric == "dcor_sq")
        if self.metric == "pearson":
            return PearsonStatistic()
        if self.metric == "hgb":
            return TreesStatistic()
        return CriticStatistic(self.critic_params)

    def _prepare(self, Z, rng=None, stream=False):
        """Validate parameters and ``Z``; return float64 rows (subsampled), a RandomState and
        the device. Given ``rng``, ``Z`` holds the rows drawn with it already. With
        ``stream``, a memory-mapped or Dask array of which every row is asked for comes back
        as a :class:`~sklearn_adm._data.chunked.ChunkedArray`, for the critic to stream."""
        self._check_parameters()
        device = resolve_device(self.device)
        if rng is None:
            rng = check_random_state(self.random_state)
            check_chunk_sizes(Z)
            rows = self._draw_rows(_num_samples(Z), rng)
            if stream and rows is None and is_chunked(Z) and len(Z) > _IN_MEMORY_ROWS:
                # the standard messages for a wrong shape, from the first rows
                check_array(np.asarray(Z[:2]), ensure_min_samples=2, ensure_min_features=2)
                return ChunkedArray(Z), rng, device
            Z = self._sampled(Z, rows)
        Z = check_array(Z, dtype=np.float64, ensure_min_samples=2, ensure_min_features=2)
        return rescaled(Z), rng, device

    def _check_parameters(self):
        self._validate_params()
        unknown = set(self.critic_params or {}) - set(CRITIC_DEFAULTS)
        if unknown:
            raise ValueError(
                f"Unknown critic_params {sorted(unknown)}; expected some of "
                f"{sorted(CRITIC_DEFAULTS)}."
            )
        fraction = CriticStatistic(self.critic_params).params(exact=False)["validation_fraction"]
        if isinstance(fraction, bool) or not isinstance(fraction, Real) or not 0 < fraction < 1:
            raise ValueError(
                "critic_params['validation_fraction'] must be a float in the range (0, 1), "
                f"got {fraction!r}."
            )

    def _draw_rows(self, n_samples, rng):
        """Sorted indices of the ``max_samples`` rows to score, or None for all."""
        if self.max_samples is not None and n_samples > self.max_samples:
            return np.sort(rng.choice(n_samples, self.max_samples, replace=False))
        return None

    @staticmethod
    def _sampled(Z, rows, **check_params):
        """The rows ``rows`` of ``Z`` (all where None); of a memory-mapped or Dask array,
        only they are read."""
        if is_chunked(Z):
            return read_rows(Z, rows)
        if rows is None:
            return Z
        return check_array(Z, dtype=None, **check_params)[rows]

    def per_feature(self, Z):
        """Dependence of each column on all the other columns together.

        Parameters
        ----------
        Z : array-like of shape (n_samples, n_features)
            At least 2 rows and 2 columns, finite.

        Returns
        -------
        ndarray of shape (n_features,) or pandas.Series
            In [0, 1]; a constant column has 0. A Series indexed by the column names when
            ``Z`` is a DataFrame, or when scikit-learn's ``transform_output`` is "pandas".
        """
        statistic = self._statistic()
        values = statistic.per_feature(*self._prepare(Z, stream=statistic.streams))
        return labelled(values, column_names(Z), self.metric)

    def score(self, Z):
        """Mean of :meth:`per_feature`: the paper's metric with ``metric="dcor"``.

        Parameters
        ----------
        Z : array-like of shape (n_samples, n_features)

        Returns
        -------
        float
        """
        return float(np.mean(self.per_feature(Z)))

    def pairwise(self, Z):
        """Dependence of every pair of columns.

        Parameters
        ----------
        Z : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_features, n_features) or pandas.DataFrame
            Symmetric; 1 on the diagonal except for constant columns. A DataFrame whose index
            and columns are the column names when ``Z`` is a DataFrame, or when
            scikit-learn's ``transform_output`` is "pandas".
        """
        result = self._statistic().pairwise(*self._prepare(Z))
        names = column_names(Z)
        if names is None:
            return result
        import pandas as pd

        return pd.DataFrame(result, index=names, columns=names)

    def test(self, X, Y=None, n_permutations=200, *, Z=None):
        """Permutation test of independence, with the estimator's floor.

        - ``test(Z)``: are the columns of ``Z`` mutually independent? Each permutation
          shuffles every column on its own; the statistic is :meth:`per_feature`, one p-value
          per column. The permutations' mean is the floor: the score independent columns of
          the same marginals and size get (the V-statistic is biased upwards).
        - ``test(X, Y)``: are the rows of ``X`` independent of those of ``Y``? Each
          permutation shuffles ``Y``'s rows against ``X``'s.
        - ``test(X, Y, Z=Z)``: is ``X`` independent of ``Y`` given ``Z``? The residuals of
          ``X`` and ``Y`` given ``Z`` (a cross-fitted kernel ridge regression) are tested as
          two samples, ``Y``'s rows shuffled only among rows of nearly equal ``Z``: exact
          where ``Z`` takes few values, approximate for a continuous ``Z``. From
          ``ASYMPTOTIC_ROWS`` rows the distance test draws no permutations and tests against
          a Gaussian limit, in time linear in the rows (``result.method`` says so).

        With ``metric="adm"`` the critic trains once, on part of the rows (``critic_params``
        sets how), and the statistic and every permutation are read on the others, which it
        never saw: the test is exact at any sample size. The user guide's "Testing
        independence" and "Which test when" say how each test works, its level and its power.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The columns to test (``Y=None``), or the first sample.
        Y : array-like of shape (n_samples, n_features_y) or None, default=None
            The second sample, row ``i`` paired with row ``i`` of ``X``.
        n_permutations : int, default=200
            Number of permutations; the smallest p-value is ``1 / (n_permutations + 1)``.
        Z : array-like of shape (n_samples, n_features_z) or None, default=None
            The conditioning set, row ``i`` paired with row ``i`` of ``X`` and ``Y``; needs
            ``Y``.

        Returns
        -------
        result : DependenceTestResult
            ``statistic``, ``pvalue``, ``null_mean`` (the floor) and ``n_permutations``.
            With ``Y=None``, per column (Series indexed by the column names where
            :meth:`per_feature` returns one); with ``Y``, numbers: the dependence between
            ``X`` and ``Y`` (distance correlation; the first canonical correlation for
            ``"pearson"``; for ``"adm"`` the mean over the columns of ``[X, Y]`` of the
            critic's held-out estimate of their dependence on the other columns).

        Raises
        ------
        ValueError
            With ``metric="hgb"`` (each permutation would refit boosted trees), a
            non-positive ``n_permutations``, ``Z`` without ``Y``, samples of different
            lengths, or too few rows for the critic's held-out part (``"adm"``).

        References
        ----------
        .. [1] Székely, G. J., Rizzo, M. L. and Bakirov, N. K. (2007). Measuring and testing
           dependence by correlation of distances. The Annals of Statistics 35(6).

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_adm import DependenceScorer
        >>> rng = np.random.default_rng(0)
        >>> x = rng.uniform(-1, 1, size=(500, 1))
        >>> Z = np.c_[x, x**2, rng.normal(size=500)]
        >>> result = DependenceScorer("dcor", random_state=0).test(Z)
        >>> result.pvalue.round(3)  # the smallest possible p-value is 1 / 201
        array([0.005, 0.005, 0.736])
        >>> result = DependenceScorer("adm", random_state=0).test(x, x**2)
        >>> round(result.statistic, 1), round(result.pvalue, 3)
        (1.0, 0.005)
        """
        statistic = self._statistic()
        if statistic.untestable:
            raise ValueError(
                "test() supports the metrics 'dcor', 'dcor_sq', 'pearson' and 'adm'; with "
                f"{self.metric!r} {statistic.untestable}."
            )
        if not isinstance(n_permutations, Integral) or n_permutations < 1:
            raise ValueError(f"n_permutations must be a positive integer, got {n_permutations!r}.")
        if Z is not None and Y is None:
            raise ValueError(
                "A conditional test needs Y: test(X, Y, Z=Z) tests X against Y given Z."
            )
        if Y is not None:
            return self._test_samples(X, Y, n_permutations, Z)
        names = column_names(X)
        Z, rng, device = self._prepare(X, stream=statistic.streams)
        values, p_values, floor = statistic.test_columns(Z, n_permutations, rng, device)
        return DependenceTestResult(
            labelled(values, names, "statistic"),
            labelled(p_values, names, "pvalue"),
            labelled(floor, names, "null_mean"),
            n_permutations,
        )

    def _test_samples(
        self,
        X,
        Y,
        n_permutations,
        Z=None,
        *,
        shared=None,
        early_stop=None,
        asymptotic_rows=ASYMPTOTIC_ROWS,
    ):
        """:meth:`test` of two samples. ``shared`` computes what depends on Z alone and the
        samples' residuals given Z (:class:`~._conditional_test.Afresh`, or a cache of them
        for many tests given one Z); ``early_stop``: see
        :func:`~._permutation.sequential_test` and :func:`~._permutation.staged_test`; from
        ``asymptotic_rows`` rows a statistic with an asymptotic test uses it given Z, and
        without Z, where the test stops early, its limit as the first stage."""
        samples = [X, Y] if Z is None else [X, Y, Z]
        for A in samples:
            check_chunk_sizes(A)
        if len({_num_samples(A) for A in samples}) > 1:
            names = "X and Y" if Z is None else "X, Y and Z"
            raise ValueError(
                f"{names} must have the same number of rows, got "
                f"{', '.join(str(_num_samples(A)) for A in samples)}."
            )
        self._check_parameters()
        rng = check_random_state(self.random_state)
        rows = self._draw_rows(_num_samples(X), rng)
        samples = [self._sampled(A, rows, ensure_2d=False) for A in samples]
        samples = [
            check_array(A, dtype=np.float64, ensure_min_samples=2, ensure_2d=False) for A in samples
        ]
        X, Y, *Z = (A.reshape(len(A), -1) for A in samples)
        statistic = self._statistic()
        shared = Afresh() if shared is None else shared
        given = scaled = None
        if Z and statistic.asymptotic and len(X) >= asymptotic_rows:
            return statistic.asymptotic_test(X, Y, Z[0], rng, shared)
        if Z:
            given, X, Y, scaled = residuals_given(X, Y, Z[0], rng, shared, statistic.reads_z)
        # every statistic is invariant to the scale of X and of Y: each to entries of at most
        # 1 (X of 1e200 beside Y of 1 would leave Y's squares at 0 in one scale)
        XY, rng, device = self._prepare(np.hstack([X / magnitude(X), Y / magnitude(Y)]), rng)
        X, Y = XY[:, : X.shape[1]], XY[:, X.shape[1] :]
        if not Z and statistic.asymptotic and len(X) >= asymptotic_rows and early_stop is not None:
            result = statistic.limit_first(X, Y, early_stop, rng)
            if result is not None:
                return result
        return statistic.test_samples(
            X, Y, given, n_permutations, rng, device, scaled=scaled, early_stop=early_stop
        )

    def __call__(self, estimator, X, y=None):
        """Scorer protocol: ``-score(estimator.transform(X))``, higher is more independent.

        For a Pipeline whose last step cannot transform (a classifier, say), the
        representation is the output of the steps before it.
        """
        if not hasattr(estimator, "transform") and isinstance(estimator, Pipeline):
            estimator = estimator[:-1]
        return -self.score(estimator.transform(X))
