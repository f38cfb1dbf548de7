"""The linear analogue of every dependence measure here (``metric="pearson"``): the multiple
correlation of a column with the others, the absolute correlation of a pair, and the first
canonical correlation of two samples."""

import numpy as np

from ._permutation import group_permutations, sequential_test
from ._result import two_sample_result
from ._statistic import Statistic

#: smallest eigenvalue ratio at which the correlation matrix is inverted
_WELL_CONDITIONED = 1e-8


class PearsonStatistic(Statistic):
    """Pearson's correlation: dependence that a linear regression explains."""

    def per_feature(self, Z, rng, device):
        return multiple_correlation(Z)

    def pairwise(self, Z, rng, device):
        scaled = unit_columns(Z)
        return np.abs(scaled.T @ scaled)

    def per_feature_of_each(self, copies, count, device):
        return np.array([multiple_correlation(copy) for copy in copies])

    def test_samples(self, X, Y, given, n_permutations, rng, device, scaled=None, early_stop=None):
        groups = None if given is None else given.groups
        orders = group_permutations(len(Y), groups, n_permutations, rng)

        def statistics(orders):
            permuted = [canonical_correlation(X, Y[order]) for order in orders]
            return np.array([canonical_correlation(X, Y)]), np.reshape(permuted, (-1, 1))

        observed, permuted, p = sequential_test(statistics, orders, n_permutations, early_stop)
        method = "permutation" if groups is None else "local permutation"
        return two_sample_result(observed[0], p, permuted.mean(), len(permuted), method)


def canonical_correlation(X, Y):
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


def unit_columns(Z):
    """Centred columns of unit norm; constant columns are all 0."""
    centred = Z - Z.mean(axis=0)
    norms = np.sqrt((centred**2).sum(axis=0))
    return centred / np.where(norms > 0, norms, 1.0)


def multiple_correlation(Z):
    """Multiple correlation R_j of each column with the others: R_j^2 is the share of the
    column's variance that a linear regression on the others explains (0 for a constant
    column, which neither explains nor is explained)."""
    scaled = unit_columns(Z)
    varying = np.flatnonzero(np.any(scaled != 0, axis=0))
    scaled = scaled[:, varying]
    result = np.zeros(Z.shape[1])
    eigenvalues, vectors = np.linalg.eigh(scaled.T @ scaled)  # of the correlation matrix C
    if varying.size and eigenvalues[0] > _WELL_CONDITIONED * eigenvalues[-1]:
        # the residual of column j regressed on the others is 1 / (C^-1)_jj: one
        # decomposition for all columns instead of a solve for each
        residual = 1.0 / ((vectors**2) @ (1.0 / eigenvalues))
        result[varying] = np.sqrt(np.clip(1.0 - residual, 0.0, 1.0))
        return result
    for j, column in enumerate(varying):  # nearly collinear columns: one solve each
        target, others = scaled[:, j], np.delete(scaled, j, axis=1)
        coefficients = np.linalg.lstsq(others, target, rcond=None)[0]
        explained = target @ target - np.sum((target - others @ coefficients) ** 2)
        result[column] = np.sqrt(np.clip(explained, 0.0, 1.0))
    return result
