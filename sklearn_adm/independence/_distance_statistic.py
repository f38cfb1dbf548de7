"""Distance correlation as the scorer's statistic (``metric="dcor"`` and ``"dcor_sq"``): the
biased V-statistic of Székely et al. (2007), by the exact engines of :mod:`._distance` and
:mod:`._sorting`, and its tests: by permutation, within groups of nearly equal Z, or given Z
from ``ASYMPTOTIC_ROWS`` rows by the grouped covariance's limit
(:mod:`._grouped_covariance`)."""

import numpy as np

from ._conditional import local_statistics, random_unions
from ._distance import (
    _one_vs_rest_of_each,
    blockwise_distance_correlation,
    distance_correlation_one_vs_rest,
    permuted_distance_correlation,
)
from ._permutation import (
    group_permutations,
    inverse_permutations,
    largest_p_value,
    sequential_test,
    staged_test,
)
from ._result import two_sample_result
from ._sorting import (
    distance_correlation_limit,
    distance_correlation_pairwise,
    sorted_permutations,
)
from ._statistic import Statistic

#: how the conditional distance test finds its p-value from ``ASYMPTOTIC_ROWS`` rows
ASYMPTOTIC = "asymptotic, random frequencies"
#: a p-value of a valid bound at or below which a test that stops early needs no
#: permutations: they would give their smallest p-value (design/causal-discovery)
SURE_P = 1e-5
#: rows up to which the conditional test's statistic over all rows is computed over all
#: rows for multivariate X or Y (two n x n matrices); beyond, it is averaged over random
#: unions of blocks of about ``_UNION_ROWS`` rows, at a cost linear in the rows
_FULL_ROWS = 4096
_UNION_ROWS = 1024
#: rows beyond which the multivariate test's two n x n matrices give way to random
#: projections tested by sorting, in memory linear in the rows
ENGINE_ROWS = 8192
#: random directions of each sample there: the projected statistic's power approaches the
#: full statistic's at the rows where it is used (doc/design/dcor-one-dimensional.md)
_PROJECTIONS = 32


class DistanceStatistic(Statistic):
    """Distance correlation, or its square (``squared``): 0 if and only if independent (in
    the population)."""

    asymptotic = True

    def __init__(self, squared):
        self.squared = squared

    def per_feature(self, Z, rng, device):
        return distance_correlation_one_vs_rest(Z, squared=self.squared, device=device)

    def pairwise(self, Z, rng, device):
        return distance_correlation_pairwise(Z, squared=self.squared)

    def per_feature_of_each(self, copies, count, device):
        return _one_vs_rest_of_each(copies, count, squared=self.squared, device=device)

    def test_samples(self, X, Y, given, n_permutations, rng, device, scaled=None, early_stop=None):
        """Without Z (``given`` None) the statistic is the squared distance correlation of X
        and Y, permuted among all rows; for one-dimensional X and Y, by sorting
        (:func:`sorted_permutations`), and for multivariate X or Y beyond ``ENGINE_ROWS``
        rows, that of random projections of each (:func:`_projected`). Given Z, the p-value
        is that of the largest of four statistics, each standardised over the permutations
        (:func:`~._permutation.largest_p_value`): that one over all rows (over random unions
        of blocks of about ``_UNION_ROWS`` rows beyond ``_FULL_ROWS`` rows of multivariate X
        or Y, so that the cost stays linear in the rows) and the three within blocks of
        nearly equal Z (:func:`~._conditional.local_statistics`)."""
        n = len(X)
        paired = X.shape[1] == Y.shape[1] == 1
        method = "permutation" if given is None else "local permutation"
        if given is None and not paired and n > ENGINE_ROWS:
            X, Y, paired = _projected(X, rng), _projected(Y, rng), True
            method = "permutation, random projections"
        if given is None:  # dcor's test's permutations (of X's rows; these are Y's), in
            # blocks drawn as they are read: sorting keeps O(n) memory at any n
            orders = inverse_permutations(n, n_permutations, rng)
            if not paired:
                orders = np.concatenate(list(orders))
        else:
            orders = group_permutations(n, given.groups, n_permutations, rng)
        unions = None
        if given is not None and not paired and n > _FULL_ROWS:
            unions = random_unions(given.blocks, _UNION_ROWS, rng)
        if paired:  # one sort, and the threads chosen for all the test's sweeps
            sorted_observed, sorted_permuted = sorted_permutations(X, Y, n_permutations + 1)

        def statistics(orders):
            if paired:
                observed, permuted = sorted_observed, sorted_permuted(orders)
            elif unions is not None:
                observed, permuted = blockwise_distance_correlation(X, Y, unions, orders)
            else:
                observed, permuted = permuted_distance_correlation(X, Y, orders)
            observed, permuted = np.atleast_1d(observed), np.reshape(permuted, (-1, 1))
            if given is not None:
                local, local_permuted = local_statistics(X, Y, given.blocks, orders)
                observed = np.r_[observed, local]
                permuted = np.hstack([permuted, local_permuted])
            return observed, permuted

        if given is None:
            observed, permuted, p = sequential_test(statistics, orders, n_permutations, early_stop)
        else:
            observed, permuted, p = staged_test(
                statistics, largest_p_value, orders, n_permutations, early_stop
            )
        statistic, permuted = observed[0], permuted[:, 0]
        if not self.squared:
            statistic, permuted = np.sqrt(statistic), np.sqrt(permuted)
        return two_sample_result(statistic, p, permuted.mean(), len(permuted), method)

    def limit_first(self, X, Y, early_stop, rng):
        """The first stage of a test without Z that stops early, from the statistic's limit
        (:func:`distance_correlation_limit`) in place of permutations: a result where the
        chi-square bound's p-value is at most ``SURE_P``, or, for one-dimensional X and Y,
        where the gamma law's is above ``early_stop``; else None, and the permutations
        decide. Multivariate X or Y beyond ``ENGINE_ROWS`` rows are read on the random
        projections the permutations would read (drawn from a copy of ``rng``); below, the
        permutations decide. Neither draws from ``rng``: the permutations are a lone
        test's. A reported p-value at most ``alpha < early_stop`` is the permutations' or
        the bound's, so the level is at most ``alpha + SURE_P``."""
        method = "asymptotic, {}"
        if X.shape[1] > 1 or Y.shape[1] > 1:
            if len(X) <= ENGINE_ROWS:
                return None
            draws = np.random.RandomState()
            draws.set_state(rng.get_state())
            X, Y = _projected(X, draws), _projected(Y, draws)
            method += ", random projections"
        statistic, p_gamma, p_bound, null_mean = distance_correlation_limit(X, Y)
        if p_gamma is not None and p_gamma > early_stop:
            p_value, method = p_gamma, method.format("gamma")
        elif p_bound <= SURE_P:
            p_value, method = p_bound, method.format("chi-square bound")
        else:
            return None
        if not self.squared:
            statistic, null_mean = np.sqrt(statistic), np.sqrt(null_mean)
        return two_sample_result(statistic, p_value, null_mean, 0, method)

    def asymptotic_test(self, X, Y, Z, rng, shared):
        """The test given Z from ``ASYMPTOTIC_ROWS`` rows: the covariance, within groups of
        nearly equal Z, of features of the residuals' characteristic functions at random
        frequencies, against its Gaussian limit, in time linear in the rows
        (:class:`~._grouped_covariance.GroupedConditioning`; ``shared``:
        :class:`~._conditional_test.Afresh` or a cache of its work)."""
        given = shared.grouped(Z, int(rng.randint(np.iinfo(np.int32).max)))
        x, y = shared.prepared(given, X, Y)
        statistic, p_value, null_mean = given.test(x, y, shared.workspace)
        if not self.squared:
            statistic, null_mean = np.sqrt(statistic), np.sqrt(null_mean)
        return two_sample_result(statistic, p_value, null_mean, 0, ASYMPTOTIC)


def _projected(A, rng):
    """``A`` ``(n, p)`` on ``_PROJECTIONS`` directions drawn uniformly on the sphere, one a
    column (a one-column ``A`` is repeated: its only direction): the test of Huang & Huo
    (2017), whose mean of one-dimensional distance covariances is, in expectation over the
    directions, the full statistic up to a constant."""
    if A.shape[1] == 1:
        return np.repeat(A, _PROJECTIONS, axis=1)
    directions = rng.standard_normal((A.shape[1], _PROJECTIONS))
    return A @ (directions / np.linalg.norm(directions, axis=0))
