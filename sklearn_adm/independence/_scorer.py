"""DependenceScorer: how dependent the columns of any feature matrix are."""

import itertools
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
import torch
from sklearn import get_config
from sklearn.base import BaseEstimator
from sklearn.pipeline import Pipeline
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _num_samples, check_array

from .._data.chunked import ChunkedArray, check_chunk_sizes, is_chunked, read_rows
from .._data.rows import split_rows
from .._data.scaling import magnitude
from .._runtime.device import resolve_device
from ..nn._critic import ADMCritic, _standardize
from ..nn._training import calibrate, calibrated_fit, train_critic
from ._conditional import (
    LocalConditioning,
    draw_folds,
    group_permutations,
    local_statistics,
    random_unions,
)
from ._distance import (
    _one_vs_rest_of_each,
    blockwise_distance_correlation,
    distance_correlation_one_vs_rest,
    permuted_distance_correlation,
)
from ._grouped_covariance import ASYMPTOTIC_ROWS, GroupedConditioning
from ._neighbours import neighbour_predictions
from ._sorting import distance_correlation_pairwise, permuted_by_sorting
from ._trees import gradient_boosting_dependence

#: how the conditional distance test finds its p-value from ``ASYMPTOTIC_ROWS`` rows
_ASYMPTOTIC = "asymptotic, random frequencies"
#: Options of the learned metric, and their defaults.
_CRITIC_DEFAULTS = {
    "critic_hidden": 32,
    "probe_hidden": 16,
    "probes": True,
    "predictor_rank": None,
    "max_iter": 500,
    "batch_size": 512,
    "critic_learning_rate": 2e-2,
    "validation_fraction": 0.3,
}
#: the learned test's critic unless critic_params says otherwise: long training, half held out
_TEST_CRITIC = {"max_iter": 2000, "validation_fraction": 0.5}
#: smallest eigenvalue ratio at which 'pearson' inverts the correlation matrix
_WELL_CONDITIONED = 1e-8
#: ridge of the held-out linear regressions, on standardised columns
_LINEAR_RIDGE = 1e-6
#: training rows, at most, among which the two-sample test looks for nearest neighbours
_NEIGHBOUR_ROWS = 4096
#: rows up to which the conditional distance test's statistic over all rows is computed over
#: all rows for multivariate X or Y (two n x n matrices of 134 MB each); beyond, it is averaged
#: over random unions of blocks of about ``_UNION_ROWS`` rows, at a cost linear in the rows
_FULL_ROWS = 4096
_UNION_ROWS = 1024
#: rows beyond which the multivariate distance test's two n x n matrices (1 GiB at 8,192
#: rows) give way to random projections tested by sorting, in memory linear in the rows
_ENGINE_ROWS = 8192
#: random directions of each sample there: the projected statistic's power approaches the
#: full statistic's at the rows where it is used (doc/design/dcor-one-dimensional.md)
_PROJECTIONS = 32
#: rows of an out-of-core array up to which the learned estimate reads them into memory
_IN_MEMORY_ROWS = 65_536
#: training rows of such an array, at most, that the linear floor is fitted on
_FLOOR_ROWS = 65_536


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
        among all rows), ``"permutation, random projections"`` (the multivariate distance
        test beyond ``8,192`` rows: the statistic over random one-dimensional projections of X
        and Y, in memory linear in the rows), ``"local permutation"`` (given Z: Y's rows
        shuffled within groups of nearly equal Z) or ``"asymptotic, random frequencies"``
        (the conditional distance test from ``10,000`` rows: the covariance, within groups
        of nearly equal Z, of features of the residuals' characteristic functions at random
        frequencies, against its Gaussian limit; linear in the rows).
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
        return _rescale(Z), rng, device

    def _check_parameters(self):
        self._validate_params()
        unknown = set(self.critic_params or {}) - set(_CRITIC_DEFAULTS)
        if unknown:
            raise ValueError(
                f"Unknown critic_params {sorted(unknown)}; expected some of "
                f"{sorted(_CRITIC_DEFAULTS)}."
            )
        fraction = self._critic_params(exact=False)["validation_fraction"]
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
        return _labelled(self._per_feature(Z), _column_names(Z), self.metric)

    def _per_feature(self, Z):
        Z, rng, device = self._prepare(Z, stream=self.metric == "adm")
        if self.metric in ("dcor", "dcor_sq"):
            return distance_correlation_one_vs_rest(
                Z, squared=self.metric == "dcor_sq", device=device
            )
        if self.metric == "pearson":
            return _multiple_correlation(Z)
        if self.metric == "hgb":
            return gradient_boosting_dependence(Z, random_state=rng).mean(axis=1)
        return self._adm(Z, rng, device, groups=None)

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
        names = _column_names(Z)
        result = self._pairwise(Z)
        if names is None:
            return result
        import pandas as pd

        return pd.DataFrame(result, index=names, columns=names)

    def _pairwise(self, Z):
        Z, rng, device = self._prepare(Z)
        if self.metric in ("dcor", "dcor_sq"):
            return distance_correlation_pairwise(Z, squared=self.metric == "dcor_sq")
        if self.metric == "pearson":
            return np.abs(_correlation(Z))
        d = Z.shape[1]
        if self.metric == "hgb":
            result = np.eye(d) * (Z.std(axis=0) > 0)
            for j, k in zip(*np.triu_indices(d, k=1), strict=True):
                pair = gradient_boosting_dependence(Z[:, [j, k]], random_state=rng)
                result[j, k] = result[k, j] = pair.mean()
            return result
        first, second = np.triu_indices(d, k=1)
        pairs = np.column_stack([first, second]).ravel()  # columns (j, l) side by side
        dependence = self._adm(Z[:, pairs], rng, device, groups=len(first)).reshape(-1, 2)
        result = np.eye(d) * (Z.std(axis=0) > 0)
        result[first, second] = result[second, first] = dependence.mean(axis=1)
        return result

    def test(self, X, Y=None, n_permutations=200, *, Z=None):
        """Permutation test of independence, with the estimator's floor.

        - ``test(Z)``: are the columns of ``Z`` mutually independent? Each permutation
          shuffles every column on its own; the statistic is :meth:`per_feature`, one p-value
          per column. The permutations' mean is the floor: the score independent columns of
          the same marginals and size get (the V-statistic is biased upwards).
        - ``test(X, Y)``: are the rows of ``X`` independent of those of ``Y``? Each
          permutation shuffles ``Y``'s rows against ``X``'s.
        - ``test(X, Y, Z=Z)``: is ``X`` independent of ``Y`` given ``Z``? ``X`` and ``Y``
          are predicted from ``Z`` by a cross-fitted kernel ridge regression, and the
          residuals are tested as two samples, ``Y``'s rows shuffled only among rows of nearly
          equal ``Z``; over all rows and, since their relation may change with ``Z``, within
          blocks of rows of nearly equal ``Z`` (the learned test's critic reads ``Z`` beside
          ``X``). Exact where ``Z`` takes few values, approximate for a continuous ``Z``.
          From 10,000 rows the distance test draws no permutations: it tests the
          covariance, within groups of nearly equal ``Z``, of the residuals' features at
          random frequencies (those of the distance covariance's integral) against its
          Gaussian limit (``result.method`` says so; ``n_permutations`` is not used), in
          time linear in the rows.

        With ``metric="adm"`` the critic trains once, on part of the rows (``critic_params``
        sets how), and the statistic and every permutation are read on the others, which it
        never saw: the test is exact at any sample size. For two samples it also ranks
        nearest-neighbour predictions from the other sample and, over all rows, the
        correlation of the samples' spreads (their distances to the median); given ``Z``,
        the statistics within blocks of nearly equal ``Z`` instead, over all rows. The user
        guide's "Testing independence" and "Which test when" say how each test works, its
        level and its power.

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
        if self.metric == "hgb":
            raise ValueError(
                "test() supports the metrics 'dcor', 'dcor_sq', 'pearson' and 'adm'; with "
                "'hgb' each permutation would refit boosted trees."
            )
        if not isinstance(n_permutations, Integral) or n_permutations < 1:
            raise ValueError(f"n_permutations must be a positive integer, got {n_permutations!r}.")
        if Z is not None and Y is None:
            raise ValueError(
                "A conditional test needs Y: test(X, Y, Z=Z) tests X against Y given Z."
            )
        if Y is None:
            names = _column_names(X)
            statistic, p_values, floor = self._test_columns(X, n_permutations)
            return DependenceTestResult(
                _labelled(statistic, names, "statistic"),
                _labelled(p_values, names, "pvalue"),
                _labelled(floor, names, "null_mean"),
                n_permutations,
            )
        return self._test_samples(X, Y, n_permutations, Z)

    def _test_columns(self, Z, n_permutations):
        Z, rng, device = self._prepare(Z, stream=self.metric == "adm")
        if self.metric == "adm":
            critic, _, held_out, _ = self._trained_critic(Z, rng, device, None, exact=True)

            def shuffle_columns(z, copies):
                index = np.argsort(rng.random_sample((copies, *z.shape)), axis=1)
                index = torch.as_tensor(index, device=z.device)
                return torch.gather(z.expand(copies, -1, -1), 1, index)

            observed, permuted, estimate, floor = _critic_null(
                critic, held_out, n_permutations, shuffle_columns
            )
            return estimate, _p_values(observed, permuted), floor
        copies = itertools.chain([Z], (_shuffle_columns(Z, rng) for _ in range(n_permutations)))
        if self.metric in ("dcor", "dcor_sq"):
            squared = self.metric == "dcor_sq"
            values = _one_vs_rest_of_each(
                copies, n_permutations + 1, squared=squared, device=device
            )
        else:
            values = np.array([_multiple_correlation(copy) for copy in copies])
        observed, permuted = values[0], values[1:]
        return observed, _p_values(observed, permuted), permuted.mean(axis=0)

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
        samples' residuals given Z (:class:`Afresh`, or a cache of them for many tests
        given one Z); ``early_stop``: see :meth:`_distance_test`; from ``asymptotic_rows``
        rows the distance test given Z is asymptotic."""
        shared = Afresh() if shared is None else shared
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
        if Z and self.metric in ("dcor", "dcor_sq") and len(X) >= asymptotic_rows:
            given = shared.grouped(Z[0], int(rng.randint(np.iinfo(np.int32).max)))
            statistic, p_value, null_mean = given.test(*shared.prepared(given, X, Y))
            if self.metric == "dcor":
                statistic, null_mean = np.sqrt(statistic), np.sqrt(null_mean)
            return _two_sample_result(statistic, p_value, null_mean, 0, _ASYMPTOTIC)
        given = scaled = None
        if Z and self.metric == "adm":  # its critic reads Z: Z's scale of the residuals goes
            given = LocalConditioning(Z[0], *draw_folds(len(X), rng))
            residuals = given.residuals(np.hstack([X, Y]))
            scaled = np.hstack(_within(given, given.locally_scaled(residuals), X.shape[1]))
            X, Y = _within(given, residuals, X.shape[1])
        elif Z:  # residuals given Z, permuted within groups of nearly equal Z
            given = shared.local(Z[0], rng)
            X, Y = shared.residuals(given, X, Y)
        return self._test_residuals(
            X, Y, given, n_permutations, rng, scaled=scaled, early_stop=early_stop
        )

    def _test_residuals(self, X, Y, given, n_permutations, rng, *, scaled=None, early_stop=None):
        """The two-sample test of ``X`` against ``Y``, or given Z of their residuals
        (``given``: the :class:`~sklearn_adm.independence._conditional.LocalConditioning`;
        ``scaled``: the residuals over their scale given Z, which the learned test's critic
        reads), ``rng`` in the state the test's draws start from. ``early_stop``: see
        :meth:`_distance_test`."""
        groups, blocks = (None, None) if given is None else (given.groups, given.blocks)
        Z = None if given is None else given.Z
        XY, rng, device = self._prepare(np.hstack([X, Y]), rng)  # every statistic is invariant
        X, Y = XY[:, : X.shape[1]], XY[:, X.shape[1] :]  # to the scale of X and of Y
        method = "permutation" if groups is None else "local permutation"
        if self.metric in ("dcor", "dcor_sq"):
            paired = X.shape[1] == Y.shape[1] == 1  # one-dimensional: by sorting
            if groups is None and not paired and len(X) > _ENGINE_ROWS:
                X, Y, paired = _projected(X, rng), _projected(Y, rng), True
                method = "permutation, random projections"
            statistic, p_value, null_mean, drawn = self._distance_test(
                X, Y, groups, blocks, n_permutations, rng, paired, early_stop
            )
            return _two_sample_result(statistic, p_value, null_mean, drawn, method)
        if self.metric == "pearson":
            observed = _canonical_correlation(X, Y)
            orders = group_permutations(len(Y), groups, n_permutations, rng)
            permuted = np.array([_canonical_correlation(X, Y[order]) for order in orders])
            p_value = _p_values(observed, permuted)
            return _two_sample_result(observed, p_value, permuted.mean(), n_permutations, method)
        split = X.shape[1]
        if groups is not None:  # the critic reads Z beside X: X's relation to Y may turn with Z
            scaled = _rescale(scaled)
            XY = np.hstack([scaled[:, :split], _rescale(Z), scaled[:, split:]])
            split += Z.shape[1]
        critic, train, held_out, val_rows = self._trained_critic(XY, rng, device, None, exact=True)
        # Y's rows move within groups (all rows one group without Z), the held-out rows among
        # themselves: the critic reads the held-out rows, the statistics over all rows all
        parts = np.zeros(len(XY), dtype=np.int64) if groups is None else groups
        all_orders = _held_out_apart(parts, val_rows, n_permutations, rng)
        position = np.empty(len(XY), dtype=np.intp)
        position[val_rows] = np.arange(len(val_rows))
        orders = position[all_orders[:, val_rows]]
        shuffled = 0  # Y's held-out rows read in the order of each of the orders in turn

        def shuffle_rows_of_y(z, copies):
            nonlocal shuffled
            q = z.shape[1] - split
            order = orders[shuffled : shuffled + copies]
            shuffled += copies
            rows = torch.as_tensor(order[..., None]).to(z.device).expand(-1, -1, q)
            y = torch.gather(z[:, split:].expand(copies, -1, -1), 1, rows)
            return torch.cat([z[:, :split].expand(copies, -1, -1), y], dim=-1)

        observed, permuted, estimate, floor = _critic_null(
            critic, held_out, n_permutations, shuffle_rows_of_y
        )
        if groups is None:  # the critic's nearest-neighbour statistics beside its own, and
            # the magnitudes' correlation over all rows (a ring: half the rows miss it)
            reference = rng.permutation(len(train))[:_NEIGHBOUR_ROWS]
            near_observed, near_permuted = _neighbour_null(
                critic, train[reference], held_out, split, orders
            )
            magnitude, magnitude_permuted = _magnitude_null(
                XY[:, :split], XY[:, split:], all_orders
            )
            observed = np.r_[observed, near_observed, magnitude]
            permuted = np.column_stack([permuted, near_permuted, magnitude_permuted])
        else:  # the distance test's local statistics beside the critic's
            # Z is read, not predicted: how well Y's residual predicts Z (through a scale
            # that Z drives) rests on Z's small differences within a group, which the
            # permutations do not keep (design/conditional-test)
            read = np.arange(XY.shape[1])
            read = (read >= X.shape[1]) & (read < split)
            local, local_permuted = local_statistics(X, Y, blocks, all_orders)
            observed = np.r_[observed[~read], local]
            permuted = np.hstack([permuted[:, ~read], local_permuted])
        strongest = _largest_standardized(np.vstack([observed, permuted]))
        p_value = float(_p_values(strongest[0], strongest[1:]))
        return _two_sample_result(estimate.mean(), p_value, floor.mean(), n_permutations, method)

    def _distance_test(self, X, Y, groups, blocks, n_permutations, rng, paired, early_stop=None):
        """The distance correlation test: its statistic, p-value, permutation mean and the
        permutations drawn.

        Without Z (``groups`` None) the statistic is the squared distance correlation of X
        and Y, permuted among all rows; for ``paired`` columns, that of each column of X
        with the same column of Y, by sorting (:func:`permuted_by_sorting`). Given Z, the
        p-value is that of the largest of four statistics, each standardised over the
        permutations (:func:`_largest_standardized`): that one over all rows (over random
        unions of blocks of about ``_UNION_ROWS`` rows beyond ``_FULL_ROWS`` rows of
        multivariate X or Y, so that the cost stays linear in the rows) and the three within
        blocks of nearly equal Z
        (:func:`~sklearn_adm.independence._conditional.local_statistics`).

        ``early_stop``: a p-value above which the test stops after its first
        ``FIRST_STAGE`` permutations and returns that stage's p-value (None: never). The
        p-value stays valid: it is at most ``alpha`` only where the first stage's is, for
        any ``alpha`` (design/causal-discovery). The permutations are the same draws either
        way, so a test that does not stop returns the p-value of one that never would."""
        n = len(X)
        if groups is None:  # dcor's test's permutations (of X's rows; these are Y's), in
            # blocks drawn as they are read: sorting keeps O(n) memory at any n
            orders = _inverse_permutations(n, n_permutations, rng)
            if not paired:
                orders = np.concatenate(list(orders))
        else:
            orders = group_permutations(n, groups, n_permutations, rng)
        unions = None
        if groups is not None and not paired and n > _FULL_ROWS:
            unions = random_unions(blocks, _UNION_ROWS, rng)

        def statistics(orders):
            """observed ``(k,)`` and permuted ``(len(orders), k)`` statistics"""
            if paired:
                observed, permuted = permuted_by_sorting(X, Y, orders)
            elif unions is not None:
                observed, permuted = blockwise_distance_correlation(X, Y, unions, orders)
            else:
                observed, permuted = permuted_distance_correlation(X, Y, orders)
            observed, permuted = np.atleast_1d(observed), np.reshape(permuted, (-1, 1))
            if groups is not None:
                local, local_permuted = local_statistics(X, Y, blocks, orders)
                observed = np.r_[observed, local]
                permuted = np.hstack([permuted, local_permuted])
            return observed, permuted

        def p_value(observed, permuted):
            if groups is None:
                return _p_values(observed[0], permuted[:, 0])
            strongest = _largest_standardized(np.vstack([observed, permuted]))
            return _p_values(strongest[0], strongest[1:])

        stages = _stages(orders, n_permutations if early_stop is None else FIRST_STAGE)
        observed, permuted = statistics(next(stages))
        p = p_value(observed, permuted)
        rest = next(stages, None) if early_stop is None or p <= early_stop else None
        if rest is not None:
            permuted = np.vstack([permuted, statistics(rest)[1]])
            p = p_value(observed, permuted)
        statistic, permuted = observed[0], permuted[:, 0]
        if self.metric == "dcor":
            statistic, permuted = np.sqrt(statistic), np.sqrt(permuted)
        return float(statistic), float(p), float(permuted.mean()), len(permuted)

    def __call__(self, estimator, X, y=None):
        """Scorer protocol: ``-score(estimator.transform(X))``, higher is more independent.

        For a Pipeline whose last step cannot transform (a classifier, say), the
        representation is the output of the steps before it.
        """
        if not hasattr(estimator, "transform") and isinstance(estimator, Pipeline):
            estimator = estimator[:-1]
        return -self.score(estimator.transform(X))

    def _adm(self, Z, rng, device, groups):
        """1 - calibrated held-out critic MSE per column, clipped to [0, 1]. Per feature,
        never below the held-out R^2 of a linear regression on the same rows: the squared
        maximal correlation that the critic estimates is at least the linear one, and a
        critic trained for a few thousand steps on few rows can fall short of it."""
        critic, train, held_out, _ = self._trained_critic(Z, rng, device, groups)
        _, mse = calibrate(critic, held_out)
        dependence = np.clip(1.0 - mse.cpu().numpy().astype(np.float64), 0.0, 1.0)
        if groups is None:
            dependence = np.maximum(dependence, _linear_held_out(train, held_out))
        return dependence

    def _critic_params(self, exact):
        """The critic's options: the defaults, a test's (``exact``), the user's."""
        return {**_CRITIC_DEFAULTS, **(_TEST_CRITIC if exact else {}), **(self.critic_params or {})}

    def _trained_critic(self, Z, rng, device, groups, exact=False):
        """An :class:`ADMCritic` trained on part of the rows of ``Z``, those rows, the other
        rows (tensors on ``device``) and their indices (None for a streamed array). With too
        few rows to hold some out, the same rows serve both, unless ``exact``: a test needs
        rows the critic never saw, and trains it longer."""
        params = self._critic_params(exact)
        seed = int(rng.randint(np.iinfo(np.int32).max))
        if isinstance(Z, ChunkedArray):
            train, held_out = _streamed_split(Z, params["validation_fraction"], seed, device)
            val_rows = None
        else:
            train_rows, val_rows = split_rows(len(Z), params["validation_fraction"], rng)
            if exact and len(train_rows) == len(Z):
                raise ValueError(
                    f"The 'adm' test needs rows the critic does not train on: {len(Z)} rows "
                    f"with validation_fraction={params['validation_fraction']} leave too few; "
                    "pass more rows or a larger critic_params['validation_fraction']."
                )
            z = torch.as_tensor(Z, dtype=torch.float32, device=device)
            train, held_out = z[train_rows], z[val_rows]
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            critic = ADMCritic(
                Z.shape[1],
                critic_hidden=params["critic_hidden"],
                probe_hidden=params["probe_hidden"],
                probes=params["probes"],
                n_groups=groups or 1,
                predictor_rank=params["predictor_rank"],
            ).to(device)
        train_critic(
            critic,
            train,
            steps=params["max_iter"],
            batch_size=params["batch_size"],
            learning_rate=params["critic_learning_rate"],
            generator=torch.Generator(device=device).manual_seed(seed),
        )
        if not torch.is_tensor(train):  # streamed: a sample of its rows for the linear floor
            train = train.sample(_FLOOR_ROWS)
        return critic, train, held_out, val_rows


def _streamed_split(source, validation_fraction, seed, device):
    """The critic's training rows of a :class:`~sklearn_adm._data.chunked.ChunkedArray` (streamed)
    and its
    held-out rows (at most ``MAX_HELD_OUT_ROWS``, read once), centred and scaled by the
    largest magnitude as :func:`_rescale` scales rows in memory."""
    from .._data.streaming import StreamedRows, held_out_rows

    moments = source.moments
    held_out = held_out_rows(len(source), validation_fraction, seed)

    def scale_rows(rows):
        return (rows.astype(np.float64) / moments.unit - moments.mean).astype(np.float32)

    train = StreamedRows(source, held_out, scale_rows, None, seed, device)
    return train, torch.as_tensor(scale_rows(source.take(held_out)), device=device)


#: entries of the critic's first hidden layers, at most, when it reads a stack of permutations
_NULL_CHUNK = 2**24


@torch.no_grad()
def _critic_null(critic, z, n_permutations, shuffle):
    """What a trained critic reads on the held-out rows ``z`` and on ``n_permutations``
    shuffles of them (``shuffle(z, copies)`` returns ``(copies, n, d)``).

    Returns, per column, the held-out correlation of each target with its prediction
    (observed ``(d,)``, permuted ``(n_permutations, d)``): a continuous statistic, the test's;
    and the permutation mean of the calibrated estimate ``1 - MSE`` (:func:`calibrated_fit`),
    the floor. The calibrated estimate itself is 0 whenever the correlation is negative: its
    ties would make the test conservative.

    The shuffles are read a chunk at a time, stacked: permuting rows within a column keeps its
    values, so the critic's batch statistics over a stack are those of each copy.
    """
    n, d = z.shape

    def read(stack):
        target, prediction = critic.target_and_prediction(stack.reshape(-1, d))
        target, prediction = target.view(stack.shape), prediction.view(stack.shape)
        power = prediction.square().mean(dim=-2).clamp_min(torch.finfo(z.dtype).tiny)
        correlation = (target * prediction).mean(dim=-2) / power.sqrt()
        estimate = (1.0 - calibrated_fit(target, prediction)[1]).clamp(0.0, 1.0)
        return correlation.cpu().numpy().astype(np.float64), estimate.cpu().numpy()

    width = critic.predictor_in_bias.shape[1] + (critic.probe_in.shape[1] if critic.probes else 0)
    copies = max(1, _NULL_CHUNK // (n * d * width))
    observed, estimate = read(z[None])
    chunks = [
        read(shuffle(z, min(copies, n_permutations - done)))
        for done in range(0, n_permutations, copies)
    ]
    permuted = np.concatenate([correlation for correlation, _ in chunks])
    floor = np.concatenate([estimates for _, estimates in chunks]).mean(axis=0)
    return observed[0], permuted, estimate[0].astype(np.float64), floor.astype(np.float64)


@torch.no_grad()
def _neighbour_null(critic, train, held_out, split, orders):
    """Held-out correlation of each column of ``[X, Y]`` (columns ``:split`` and ``split:``)
    and of its probe target with their nearest-neighbour predictions from the other sample
    (:func:`neighbour_predictions`, fitted on the training rows): observed ``(2 d,)``, and
    with Y's held-out rows in each of the ``orders`` ``(n_permutations, n)``. The raw columns
    are targets too: where the critic fits badly, its probes can be poor targets."""

    def targets(z):
        probes = critic.targets(_standardize(z))
        return torch.cat([probes, z], dim=1).cpu().double().numpy()

    targets_train, targets_test = targets(train), targets(held_out)
    train, test = targets_train[:, -critic.n_features :], targets_test[:, -critic.n_features :]
    columns = np.arange(2 * critic.n_features) % critic.n_features < split  # X's targets
    from_y, _ = neighbour_predictions(train[:, split:], targets_train[:, columns], test[:, split:])
    from_x, _ = neighbour_predictions(train[:, :split], targets_train[:, ~columns], test[:, :split])
    # Permuting Y's rows moves Y's targets and the predictions made from Y with them.
    moved = _unit_columns(np.hstack([from_y, targets_test[:, ~columns]]))
    fixed = _unit_columns(np.hstack([targets_test[:, columns], from_x]))
    observed = (moved * fixed).sum(axis=0)
    permuted = np.stack([(moved[order] * fixed).sum(axis=0) for order in orders])
    return observed, permuted


#: permutations of a test that stops early where their p-value is high (``early_stop``)
FIRST_STAGE = 39
#: permutations drawn at a time by :func:`_inverse_permutations`
_PERMUTATION_BLOCK = 16


class Afresh:
    """What a test given Z computes from Z alone, and the samples' residuals given Z,
    computed afresh at every test (a cache for many tests given one Z overrides these)."""

    def local(self, Z, rng):
        """The permutation test's :class:`LocalConditioning`, its folds drawn from ``rng``."""
        return LocalConditioning(Z, *draw_folds(len(Z), rng))

    def residuals(self, given, X, Y):
        """X's and Y's residuals given Z, each as the permutation test reads it."""
        return _within(given, given.residuals(np.hstack([X, Y])), X.shape[1])

    def grouped(self, Z, seed):
        """The asymptotic test's :class:`GroupedConditioning`."""
        return GroupedConditioning(Z, seed)

    def prepared(self, given, X, Y):
        """X and Y as the asymptotic test reads them."""
        return given.prepared(np.hstack([X, Y]), X.shape[1])


def _within(given, residuals, split):
    """The residuals of X (the first ``split`` columns) and of Y, within the groups of
    ``given``: X's less their linear fit on Z, Y's less their mean."""
    return given.as_x(residuals[:, :split]), given.as_y(residuals[:, split:])


def _stages(orders, first):
    """The first ``first`` of ``orders`` (an array, or blocks of one from
    :func:`_inverse_permutations`), then the rest, each an array or a list of blocks."""
    if isinstance(orders, np.ndarray):
        yield orders[:first]
        if first < len(orders):
            yield orders[first:]
        return
    head, taken = [], 0
    for block in orders:
        if taken < first:
            head.append(block[: first - taken])
            block = block[first - taken :]
            taken += len(head[-1])
            if taken == first:
                yield head
        if len(block):
            yield itertools.chain([block], orders)
            return
    if taken < first:
        yield head


def _two_sample_result(statistic, p_value, null_mean, drawn, method):
    return DependenceTestResult(float(statistic), float(p_value), float(null_mean), drawn, method)


def _inverse_permutations(n, n_permutations, rng):
    """Blocks of at most ``_PERMUTATION_BLOCK`` orders ``(block, n)``, each the inverse of
    ``rng.permutation(n)``, drawn as they are read: the permutations of dcor's test for the
    same seed."""
    rows = np.arange(n)
    for start in range(0, n_permutations, _PERMUTATION_BLOCK):
        block = np.empty((min(_PERMUTATION_BLOCK, n_permutations - start), n), dtype=np.intp)
        for inverse in block:
            inverse[rng.permutation(n)] = rows  # argsort's result, in O(n)
        yield block


def _magnitude_null(X, Y, orders):
    """The sum of the squared correlations of every column's distance to its median in X
    with every one in Y, over all rows: observed, and with Y's rows in each of ``orders``.

    A relation of X's spread to Y's (a ring: where |x| is large, |y| is small) is a
    dependence a fixed statistic finds on all rows, where the critic, held out on half of
    them, sees it with half the power: on a ring of 1,000 rows whose noise is 0.8 times its
    radius, the test rejected 0.05 of 20 draws without it and 0.35 with it (HSIC: 0.20)."""
    a = _unit_columns(np.abs(X - np.median(X, axis=0)))
    b = _unit_columns(np.abs(Y - np.median(Y, axis=0)))
    observed = ((a.T @ b) ** 2).sum()
    return observed, np.array([((a.T @ b[order]) ** 2).sum() for order in orders])


def _held_out_apart(groups, held_out, n_permutations, rng):
    """``(n_permutations, n)`` orders of the rows, each shuffling rows only within their
    group (``groups``, a label per row) and, within it, the ``held_out`` rows (indices) only
    among themselves: statistics of a critic that trained on the other rows are permuted
    alike with statistics of all rows."""
    in_held_out = np.zeros(len(groups), dtype=np.int64)
    in_held_out[held_out] = 1
    parts = np.unique(np.c_[groups, in_held_out], axis=0, return_inverse=True)[1]
    return group_permutations(len(groups), parts.reshape(-1), n_permutations, rng)


def _largest_standardized(statistics):
    """Per row of ``statistics`` ``(1 + n_permutations, n_columns)`` (the observed data
    first), the largest column after each column is standardised over all the rows.

    Columns can have very different nulls: a column of ``Y`` that the other columns of ``Y``
    predict keeps its high correlation under every permutation, and a plain maximum would be
    that column's whatever ``X`` does (hyppo's two parabolas in five dimensions: power 0 with
    the plain maximum). The standardisation treats all rows alike, so the rows stay
    exchangeable under the null and the test exact."""
    centred = statistics - statistics.mean(axis=0)
    scale = centred.std(axis=0)
    return np.where(scale > 0, centred / np.where(scale > 0, scale, 1.0), 0.0).max(axis=1)


def _p_values(observed, permuted):
    """Share of the permutations, the observed data counted as one, whose statistic reaches
    the observed one (with a tolerance for rounding)."""
    return (1 + (permuted >= observed - 1e-12).sum(axis=0)) / (1 + len(permuted))


def _canonical_correlation(X, Y):
    """The first canonical correlation of ``X`` and ``Y``: the largest Pearson correlation
    between a linear combination of the columns of each."""
    bases = []
    for A in (X, Y):
        A = A - A.mean(axis=0)
        u, s, _ = np.linalg.svd(A, full_matrices=False)
        bases.append(u[:, s > s[0] * 1e-10] if s[0] > 0 else u[:, :0])
    if not bases[0].shape[1] or not bases[1].shape[1]:
        return 0.0
    return float(min(np.linalg.norm(bases[0].T @ bases[1], ord=2), 1.0))


def _column_names(Z):
    """The names of the columns of ``Z`` where the results should carry them: a DataFrame's
    columns (as strings), or ``x0, x1, ...`` under scikit-learn's ``transform_output="pandas"``;
    else None."""
    if hasattr(Z, "columns"):
        return [str(name) for name in Z.columns]
    if get_config()["transform_output"] == "pandas":
        return [f"x{j}" for j in range(np.shape(Z)[1])]
    return None


def _labelled(values, names, name):
    """``values`` per column as a pandas Series indexed by ``names`` (as they are if None)."""
    if names is None:
        return values
    import pandas as pd

    return pd.Series(values, index=names, name=name)


def _linear_held_out(train, held_out):
    """Held-out R^2 of each column regressed linearly on the others (fitted on ``train``),
    calibrated as the critic's and clipped to [0, 1]. The regressions of all columns come
    from one inverse covariance ``P``: column ``j``'s residual is ``(z P)_j / P_jj``."""
    train, held_out = train.double(), held_out.double()
    tiny = torch.finfo(train.dtype).tiny
    mean, spread = train.mean(dim=0), train.std(dim=0, correction=0).clamp_min(tiny)
    correlation = torch.cov(((train - mean) / spread).T, correction=0).reshape(len(mean), -1)
    eye = torch.eye(len(mean), dtype=train.dtype, device=train.device)
    precision = torch.linalg.inv(correlation + _LINEAR_RIDGE * eye)
    centred = (held_out - mean) / spread
    prediction = centred - centred @ precision / precision.diagonal()
    scale = centred.std(dim=0, correction=0).clamp_min(tiny)
    _, mse = calibrated_fit(centred / scale, prediction / scale)
    return np.clip(1.0 - mse.cpu().numpy(), 0.0, 1.0)


def _rescale(Z):
    """Centre the columns and divide by one number, the largest magnitude: every metric is
    invariant to that, and any finite input then stays far from overflow (squared distances of
    1e150-sized entries would be infinite)."""
    Z = Z / magnitude(Z)
    Z = Z - Z.mean(axis=0)
    return Z / magnitude(Z)


def _projected(A, rng):
    """``A`` ``(n, p)`` on ``_PROJECTIONS`` directions drawn uniformly on the sphere, one a
    column (a one-column ``A`` is repeated: its only direction): the test of Huang & Huo
    (2017), whose mean of one-dimensional distance covariances is, in expectation over the
    directions, the full statistic up to a constant."""
    if A.shape[1] == 1:
        return np.repeat(A, _PROJECTIONS, axis=1)
    directions = rng.standard_normal((A.shape[1], _PROJECTIONS))
    return A @ (directions / np.linalg.norm(directions, axis=0))


def _shuffle_columns(Z, rng):
    """Each column permuted on its own."""
    return np.take_along_axis(Z, rng.random_sample(Z.shape).argsort(axis=0), axis=0)


def _unit_columns(Z):
    """Centred columns of unit norm; constant columns are all 0."""
    centred = Z - Z.mean(axis=0)
    norms = np.sqrt((centred**2).sum(axis=0))
    return centred / np.where(norms > 0, norms, 1.0)


def _correlation(Z):
    """Pearson correlation matrix, with 0 for constant columns (on the diagonal too)."""
    scaled = _unit_columns(Z)
    return scaled.T @ scaled


def _multiple_correlation(Z):
    """Multiple correlation R_j of each column with the others: R_j^2 is the share of the
    column's variance that a linear regression on the others explains (0 for a constant
    column, which neither explains nor is explained)."""
    scaled = _unit_columns(Z)
    varying = np.flatnonzero(np.any(scaled != 0, axis=0))
    scaled = scaled[:, varying]
    result = np.zeros(Z.shape[1])
    eigenvalues, vectors = np.linalg.eigh(scaled.T @ scaled)  # of the correlation matrix C
    if varying.size and eigenvalues[0] > _WELL_CONDITIONED * eigenvalues[-1]:
        # the residual of column j regressed on the others is 1 / (C^-1)_jj: one
        # decomposition for all columns (384 columns: 26 ms against 24 s of solves)
        residual = 1.0 / ((vectors**2) @ (1.0 / eigenvalues))
        result[varying] = np.sqrt(np.clip(1.0 - residual, 0.0, 1.0))
        return result
    for j, column in enumerate(varying):  # nearly collinear columns: one solve each
        target, others = scaled[:, j], np.delete(scaled, j, axis=1)
        coefficients = np.linalg.lstsq(others, target, rcond=None)[0]
        explained = target @ target - np.sum((target - others @ coefficients) ** 2)
        result[column] = np.sqrt(np.clip(explained, 0.0, 1.0))
    return result
