"""Distance correlation of one-dimensional columns in O(n log n), by ``dcor``'s sorting
algorithm (``method="avl"``; Huo & Székely 2016), and the cost model that says when it beats
the engine of :mod:`sklearn_adm.independence._distance`, whose cost grows as ``n^2``
(measured in ``doc/design/dcor-one-dimensional.md``)."""

import math
import sys

import numpy as np

#: the pairwise engine's seconds per n^2 (2 cores): a fixed part, a part per column (its
#: distances, shared by its pairs) and a part per pair (the products)
_ENGINE_FIXED_S = 1.5e-8
_ENGINE_COLUMN_S = 2e-9
_ENGINE_PAIR_S = 4.5e-11
#: seconds per n^2 of one permutation of the two-sample engine
_ENGINE_PERMUTATION_S = 1.3e-9
#: seconds per n log2(n) of one distance correlation by dcor's sorting algorithm
_SORTING_S = 6.3e-8
#: seconds of a process's first ``import dcor``, which compiles its numba kernels
_DCOR_IMPORT_S = 4.5
#: bytes of the two-sample engine's two ``n x n`` matrices beyond which sorting is used
_ENGINE_MEMORY = 2**30


def _sorting_cost(n, calls):
    """Seconds of ``calls`` distance correlations of ``n`` rows by sorting, with dcor's
    import where this process has not paid it yet."""
    first = 0.0 if "dcor" in sys.modules else _DCOR_IMPORT_S
    return first + calls * _SORTING_S * n * math.log2(max(n, 2))


def sorting_is_faster_pairwise(n, d):
    """Whether dcor's algorithm, pair by pair, beats the pairwise engine for ``d`` columns
    of ``n`` rows."""
    pairs = d * (d - 1) / 2
    engine = n * n * (_ENGINE_FIXED_S + _ENGINE_COLUMN_S * d + _ENGINE_PAIR_S * pairs)
    return _sorting_cost(n, pairs) < engine


def sorting_is_faster_permutations(n, n_permutations):
    """Whether dcor's algorithm, permutation by permutation, beats the two-sample engine for
    two one-dimensional samples of ``n`` rows; always where the engine's two ``n x n``
    matrices would take more than ``_ENGINE_MEMORY``."""
    if 16 * n * n > _ENGINE_MEMORY:
        return True
    engine = n_permutations * _ENGINE_PERMUTATION_S * n * n
    return _sorting_cost(n, n_permutations + 1) < engine


def _squared(x, y):
    """The squared distance correlation of two non-constant columns, by sorting."""
    # imported here, after torch (which the scorer imports first): ``import dcor`` starts
    # numba's OpenMP layer, on which torch would otherwise run (doc/design/threads.md)
    import dcor

    return max(float(dcor.distance_correlation_sqr(x, y, method="avl")), 0.0)


def pairwise_by_sorting(Z, *, squared=False):
    """:func:`~sklearn_adm.metrics.distance_correlation_pairwise` of ``Z``
    ``(n_samples, n_features)``, pair by pair in ``O(n log n)`` each."""
    Z = np.asarray(Z, dtype=np.float64)
    varies = Z.std(axis=0) > 0  # a constant column has no dependence
    result = np.diag(varies.astype(np.float64))
    for j, k in zip(*np.triu_indices(Z.shape[1], k=1), strict=True):
        if varies[j] and varies[k]:
            result[j, k] = result[k, j] = _squared(Z[:, j], Z[:, k])
    return result if squared else np.sqrt(result)


def permuted_by_sorting(x, y, orders):
    """:func:`~sklearn_adm.metrics.permuted_distance_correlation` of two one-dimensional
    samples ``x`` and ``y`` ``(n_samples,)``, in ``O(n log n)`` a permutation."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.std() == 0 or y.std() == 0:  # a constant sample: no dependence to measure
        return 0.0, np.zeros(len(orders))
    permuted = np.array([_squared(x, y[order]) for order in orders])
    return _squared(x, y), permuted
