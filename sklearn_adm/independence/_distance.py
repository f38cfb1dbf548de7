"""Exact, fast distance correlation of each feature with the others, and of every pair.

All estimators here are the biased V-statistics of Székely et al. (2007), the ones that
``dcor.distance_correlation`` computes by default, in float64.

One against the rest. For feature ``j`` and row pair ``(i, k)``, ``a = |z_ij - z_kj|`` and
``b = sqrt(D_ik^2 - a^2)``, where ``D_ik^2`` is the squared distance between the two rows over
all features: the distance work is shared by all ``d`` features. Double centring never needs
the ``n x n`` matrices: with row sums ``a_i.``, ``b_i.`` and totals ``a_..``, ``b_..``::

    sum_ik A_ik B_ik = sum_ik a_ik b_ik - (2/n) sum_i a_i. b_i. + a_.. b_.. / n^2,

so one pass over the row pairs accumulates everything (:func:`_one_vs_rest_sums`), in memory
``O(n d)`` and time ``O(n^2 d)``, in chunks of rows on threads.

Pairwise: :mod:`sklearn_adm.independence._sorting`, in ``O(n log n)`` a pair.

Permutations of two samples. With ``A`` and ``B`` the double-centred distances of ``X`` and
``Y``, ``Y``'s rows in the order ``o`` give ``dCov^2 = sum_ik A_ik B_(o_i)(o_k) / n^2``: both
matrices are computed once and each permutation is one pass over them, reading ``B``'s rows
in place (:func:`_permuted_cross_sums`), in memory ``O(n^2)`` and time ``O(n^2)`` each.
"""

import contextlib
import math
from numbers import Integral

import numba
import numpy as np
import psutil
import torch
from sklearn.utils import check_random_state, check_scalar
from sklearn.utils.validation import check_array

from ._kernels import kernel_threads, squared_correlation
from ._sorting import one_vs_rest_by_projections

__all__ = [
    "blockwise_distance_correlation",
    "distance_correlation_one_vs_rest",
    "permuted_distance_correlation",
]

#: permutations that share a pass over the fixed sample's ``n x n`` distances, whose rows
#: are then read from memory once for all of them; their rows of the moved sample stay
#: within a core's L2 cache at some thousands of rows (design/defaults)
PERMUTATIONS_A_PASS = 8


@numba.njit(cache=True, nogil=True)
def _one_vs_rest_sums(z, sums, diff, first, stop, step):
    """Add to ``sums`` ``(5, n, d)``, per row ``i`` of ``range(first, stop, step)`` and
    feature ``j``, the sums over all rows ``k`` of a, b, a*b, a^2, b^2, with ``diff``
    ``(d,)`` as room for the differences of two rows. The caller makes the arrays: an
    allocation in a kernel is compiled with it, and compiling is most of a fresh
    environment's first call (design/first-score)."""
    n, d = z.shape
    for i in range(first, stop, step):
        for k in range(n):
            squared = 0.0
            for j in range(d):
                diff[j] = z[i, j] - z[k, j]
                squared += diff[j] * diff[j]
            for j in range(d):
                a_squared = diff[j] * diff[j]
                a = abs(diff[j])
                rest = squared - a_squared  # a conditional compiles faster than `max`
                b = math.sqrt(rest) if rest > 0.0 else 0.0
                sums[0, i, j] += a
                sums[1, i, j] += b
                sums[2, i, j] += a * b
                sums[3, i, j] += a_squared
                sums[4, i, j] += b * b


def _one_vs_rest_sums_torch(Z, device, block_bytes=256e6):
    """The sums of :func:`_one_vs_rest_sums` with torch in float64, in blocks of rows; for
    accelerators, where the pairwise differences of a block fit in ``block_bytes``."""
    z = torch.as_tensor(Z, dtype=torch.float64, device=device)
    n, d = z.shape
    block = max(1, int(block_bytes / (8 * 4 * n * d)))
    sums = [[] for _ in range(5)]
    for start in range(0, n, block):
        diff = z[start : start + block, None, :] - z[None, :, :]  # (block, n, d)
        a_squared = diff.square()
        a = diff.abs()
        b = (a_squared.sum(dim=2, keepdim=True) - a_squared).clamp_min(0.0).sqrt()
        for out, value in zip(sums, (a, b, a * b, a_squared, b.square()), strict=True):
            out.append(value.sum(dim=1).cpu())
    return [torch.cat(parts).numpy() for parts in sums]


def _centred_sum(cross, row_x, row_y, n):
    """``sum_ik X_ik Y_ik`` of the double-centred matrices, from raw sums (module docstring)."""
    return (
        cross - 2.0 / n * (row_x * row_y).sum(axis=0) + row_x.sum(axis=0) * row_y.sum(axis=0) / n**2
    )


def distance_correlation_one_vs_rest(
    Z, *, squared=False, device="cpu", n_projections=None, random_state=None
):
    """Distance correlation of each column of ``Z`` with all the other columns together.

    Parameters
    ----------
    Z : array-like of shape (n_samples, n_features)
        At least two columns; computed in float64.
    squared : bool, default=False
        Return the squared distance correlation (``dcor.distance_correlation_sqr``).
    device : str or torch.device, default="cpu"
        ``"cpu"`` runs the numba kernel; another device (``"cuda"``) runs the same sums in
        torch, float64, in blocks of rows of about 256 MB.
    n_projections : int or None, default=None
        None computes the exact statistic. An int estimates it on that many random
        one-dimensional projections of the other columns (and as many more for their
        distance variance; Huang & Huo 2017), by sorting: time ``O(n_projections d n log n)``
        on the CPU, for many rows; its error and time against the exact statistic are on
        the benchmarks page (``benchmarks/bench_large_n.py``).
    random_state : int, RandomState instance or None, default=None
        Draws the projections.

    Returns
    -------
    ndarray of shape (n_features,)
        ``dcor.distance_correlation(Z[:, j], np.delete(Z, j, axis=1))`` for every ``j``, to
        within 1e-6, in time ``O(n^2 d)`` and memory ``O(n d)``; or its estimate with
        ``n_projections``. A constant column gives 0.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_adm.metrics import distance_correlation_one_vs_rest
    >>> x = np.linspace(-1, 1, 200)
    >>> distance_correlation_one_vs_rest(np.c_[x, x**2, np.ones(200)]).round(3)
    array([0.491, 0.491, 0.   ])
    """
    if n_projections is not None:
        Z = check_array(Z, dtype=np.float64, ensure_min_features=2)
        check_scalar(n_projections, "n_projections", Integral, min_val=1)
        squared_dcor = one_vs_rest_by_projections(
            Z, n_projections, check_random_state(random_state)
        )
        return squared_dcor if squared else np.sqrt(squared_dcor)
    return _one_vs_rest_of_each([Z], 1, squared=squared, device=device)[0]


def _one_vs_rest_of_each(arrays, count, *, squared=False, device="cpu"):
    """:func:`distance_correlation_one_vs_rest` of each of ``count`` arrays of one shape
    (an iterable, read one array at a time), ``(count, n_features)``: their threads are
    chosen once, for all of them (a permutation test's hundreds of small evaluations)."""
    results = []
    with contextlib.ExitStack() as stack:
        run = None
        for Z in arrays:
            Z = np.ascontiguousarray(Z, dtype=np.float64)
            n, d = Z.shape
            if torch.device(device).type != "cpu":
                sums = _one_vs_rest_sums_torch(Z, device)
            else:
                if run is None:
                    run = stack.enter_context(kernel_threads(Z.size * n))
                sums = np.zeros((5, n, d))
                run(_one_vs_rest_sums, n, lambda d=d: (np.empty(d),), Z, sums)
            row_a, row_b, sum_ab, sum_aa, sum_bb = sums
            squared_dcor = squared_correlation(
                _centred_sum(sum_ab.sum(axis=0), row_a, row_b, n),
                _centred_sum(sum_aa.sum(axis=0), row_a, row_a, n),
                _centred_sum(sum_bb.sum(axis=0), row_b, row_b, n),
            )
            results.append(squared_dcor if squared else np.sqrt(squared_dcor))
    return np.array(results)


def permuted_distance_correlation(X, Y, orders):
    """Squared distance correlation of the rows of ``X`` and ``Y``, and with ``Y``'s rows in
    each of ``orders``: the statistic of a permutation test of independence.

    Parameters
    ----------
    X, Y : ndarray of shape (n_samples, p) and (n_samples, q)
    orders : ndarray of int of shape (n_permutations, n_samples)
        Row ``orders[c, i]`` of ``Y`` takes the place of row ``i`` in permutation ``c``.

    Returns
    -------
    observed : float
        ``dcor.distance_correlation_sqr(X, Y)``.
    permuted : ndarray of shape (n_permutations,)
        ``dcor.distance_correlation_sqr(X, Y[order])`` for each order.

    Notes
    -----
    Each sample's distances are double-centred once (two ``n x n`` matrices, in float64);
    a permutation then costs a share of a pass over them (:func:`_permuted_cross_sums`),
    reading the permuted matrix's rows in place, where ``dcor``'s test copies a permuted
    matrix each time.
    """
    n = len(X)
    needed, available = 16 * n * n, psutil.virtual_memory().available
    if needed > available:
        raise ValueError(
            f"The two {n} x {n} distance matrices of {n} rows need {needed / 2**30:.1f} GiB; "
            f"{available / 2**30:.1f} GiB are available. DependenceScorer('dcor').test(X, Y) "
            "computes in memory linear in the rows (random projections beyond 8,192 rows)."
        )
    x, y = _double_centred_distances(X), _double_centred_distances(Y)
    # sums over the n x n matrices without temporaries of their size
    variance = np.sqrt(max(np.vdot(x, x), 0.0) * max(np.vdot(y, y), 0.0)) / n**2
    if variance == 0:  # a constant sample: no dependence to measure
        return 0.0, np.zeros(len(orders))
    orders = np.ascontiguousarray(orders, dtype=np.intp)
    cross = np.empty(len(orders))
    with kernel_threads(len(orders) * n * n) as run:
        _run_permuted_cross_sums(run, x, y, orders, cross)
    observed = np.vdot(x, y) / n**2
    return float(max(observed, 0.0) / variance), np.maximum(cross / n**2, 0.0) / variance


def _double_centred_distances(A):
    """The double-centred Euclidean distances between the rows of ``A``, ``(n, n)``."""
    from scipy.spatial.distance import cdist

    return _double_centred(cdist(A, A))


def _double_centred_gaussian(A):
    """The double-centred Gaussian kernel ``exp(-|a_i - a_k|^2 / m)`` of the rows of ``A``,
    ``(n, n)``, ``m`` the median squared distance between two of them (the median
    heuristic)."""
    from scipy.spatial.distance import cdist

    squares = cdist(A, A, "sqeuclidean")
    width = np.median(squares[np.triu_indices(len(A), 1)])
    return _double_centred(np.exp(-squares / width) if width > 0 else np.zeros_like(squares))


def _double_centred(matrix):
    """``matrix`` less its row and column means, plus its mean: ``H matrix H``, in place."""
    row_means = matrix.mean(axis=1)
    matrix -= row_means[:, None]
    matrix -= row_means[None, :]
    matrix += row_means.mean()
    return matrix


def _run_permuted_cross_sums(run, fixed, moved, orders, sums):
    """:func:`_permuted_cross_sums` of every order by ``run`` (a runner of :mod:`._kernels`),
    in runs of whole passes."""
    run(
        _permuted_cross_sums,
        len(orders),
        tuple,
        fixed,
        moved,
        orders,
        sums,
        grain=PERMUTATIONS_A_PASS,
    )


@numba.njit(cache=True, nogil=True)
def _permuted_cross_sums(fixed, moved, orders, sums, first, stop, step):
    """Into ``sums`` ``(n_permutations,)``, ``sum_ik fixed[i, k] moved[order[i], order[k]]``
    for each order of ``orders[first:stop:step]``, :data:`PERMUTATIONS_A_PASS` of them in
    each pass over ``fixed``: the passes are bound by the memory's bandwidth, and each row of
    ``fixed`` is then read once for all of them. Every sum is taken in the same order."""
    n = orders.shape[1]
    count = max(0, (stop - first + step - 1) // step)
    for group in range(0, count, PERMUTATIONS_A_PASS):
        members = min(PERMUTATIONS_A_PASS, count - group)
        for member in range(members):
            sums[first + (group + member) * step] = 0.0
        for i in range(n):
            fixed_row = fixed[i]
            for member in range(members):
                c = first + (group + member) * step
                order = orders[c]
                row = moved[order[i]]
                part = 0.0
                for k in range(n):
                    part += fixed_row[k] * row[order[k]]
                sums[c] += part


def blockwise_distance_correlation(X, Y, blocks, orders, kernel="distance"):
    """The squared distance correlation of ``X`` and ``Y`` within each block of rows,
    averaged over the blocks, and the same with ``Y``'s rows in each of ``orders``; or, with
    ``kernel="gaussian"``, the same correlation of Gaussian kernels.

    Parameters
    ----------
    X, Y : ndarray of shape (n_samples, p) and (n_samples, q)
    blocks : ndarray of int of shape (n_samples,)
        A block label per row.
    orders : ndarray of int of shape (n_permutations, n_samples)
        Row ``orders[c, i]`` of ``Y`` takes the place of row ``i``; every row stays in its
        block.
    kernel : {"distance", "gaussian"}, default="distance"
        Which double-centred matrices of each block are correlated: the distances (the
        squared distance correlation) or a Gaussian kernel of the distances, its width the
        block's median distance (the normalised HSIC of Gretton et al. 2005, which sees an
        oscillating relation that the distances, nearly linear over a block, miss).

    Returns
    -------
    observed : float
    permuted : ndarray of shape (n_permutations,)

    Notes
    -----
    Each block is :func:`permuted_distance_correlation` on its rows, so the cost is the sum
    of the blocks' squared sizes per permutation: linear in the rows for blocks of a fixed
    size. A block where either sample is constant measures nothing and is left out.
    """
    orders = np.asarray(orders, dtype=np.intp)
    by_block = np.argsort(blocks, kind="stable")
    edges = np.flatnonzero(np.diff(blocks[by_block])) + 1
    block_rows = [rows for rows in np.split(by_block, edges) if len(rows) > 1]
    position, cross = np.empty(len(X), dtype=np.intp), np.empty(len(orders))
    observed, permuted, counted = 0.0, np.zeros(len(orders)), 0
    work = len(orders) * sum(len(rows) ** 2 for rows in block_rows)
    centred = {"distance": _double_centred_distances, "gaussian": _double_centred_gaussian}[kernel]
    with kernel_threads(work) as run:
        for rows in block_rows:
            x, y = centred(X[rows]), centred(Y[rows])
            variance = np.sqrt(max(np.vdot(x, x), 0.0) * max(np.vdot(y, y), 0.0))
            if variance == 0:
                continue
            position[rows] = np.arange(len(rows))
            local_orders = np.ascontiguousarray(position[orders[:, rows]])
            observed += max(np.vdot(x, y), 0.0) / variance
            _run_permuted_cross_sums(run, x, y, local_orders, cross)
            permuted += np.maximum(cross, 0.0) / variance
            counted += 1
    counted = max(counted, 1)
    return observed / counted, permuted / counted
