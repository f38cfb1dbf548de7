"""Exact distance correlation of one-dimensional columns in ``O(n log n)`` time and ``O(n)``
memory a column: every pair of columns, and the permutations of a two-sample test.

For 1-D ``x`` and ``y`` the V-statistic is ``n^2 dCov^2 = S - (2/n) sum_i a_i b_i +
sum_i a_i sum_i b_i / n^2``, with the row sums ``a_i = sum_k |x_i - x_k|`` and ``b_i`` of ``y``,
and the cross sum ``S = sum_ik |x_i - x_k||y_i - y_k|``. With ``sigma_ik`` the product of the
signs of ``rank(x_i) - rank(x_k)`` and ``rank(y_i) - rank(y_k)`` (ranks with ties broken by
row: a tied pair adds 0 whatever its sign), ``S = 2 sum_i x_i (y_i K_i - W_i)``,
``K_i = sum_k sigma_ik`` and ``W_i = sum_k sigma_ik y_k``. Counting, for each row, the rows
below it in both orders (``c_i``) and the sum of their ``y`` (``s_i``) gives the four quadrants,
and::

    S / 2 = 4 D + 2 E + n sum x y - 2 sum x y p - 2 sum x y r - sum x sum y + 2 sum x P,

with ``p`` and ``r`` the ranks of ``x`` and ``y``, ``P_i`` the sum of the ``y`` ranked below
``y_i``, ``D = sum_i x_i (y_i c_i - s_i)`` and ``E = sum_i x_i`` times the sum of the ``y`` of
the rows ranked below ``x_i``. One sweep in ``x``'s order computes all of it
(:func:`_covariance`), ``c`` and ``s`` with a Fenwick tree over ``y``'s ranks, and ``a`` and
``b`` from the prefix sums of the sorted columns (``a_i = x_i (2 p_i - n) - 2 X_i + sum x``,
``X_i`` the sum of the ``x`` below ``x_i``). Sorting each column once serves all its pairs,
and the pairs (or a test's permutations) run in parallel. dcor's ``method="avl"`` (Huo &
Székely 2016) computes the same statistic and sorts both columns at every call.
"""

import itertools
import warnings
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
from sklearn.utils.validation import check_array

from .._runtime.threads import FitThreads
from ._distance import _numba_kernel, _ratio

__all__ = ["distance_correlation_pairwise", "one_vs_rest_by_projections", "permuted_by_sorting"]


#: ranks in a block of the sweep's two-level tree: each block's own Fenwick tree (1 KB) and
#: the tree over the blocks (250 KB at 1,000,000 rows) are read from a core's cache; at
#: 1,000,000 rows the sweep took 48-51 ms where one tree over all ranks (16 MB) took 68-74 ms
_BLOCK_BITS = 6
#: rows up to which one tree over all ranks (2 MB, a core's cache) is swept: at 100,000 rows
#: it took 2.3 ms where the two-level tree took 2.7 ms
_ONE_TREE_ROWS = 2**17
#: the sweep's cost in units of the engines' work per row (for the threads' choice)
_SWEEP_WORK = 64
#: values below which the columns are sorted on the calling thread: choosing threads and
#: starting a pool cost about 1.5 ms, the sort of 65,536 values about 2 ms
_SERIAL_SORT = 2**16


@numba.njit(inline="always")
def _tree_sums(tree, index, base):
    """Sums of the first ``index`` entries of the Fenwick tree of (count, sum) pairs that
    starts at row ``base`` of ``tree``."""
    count, total = 0.0, 0.0
    while index > 0:
        count += tree[base + index, 0]
        total += tree[base + index, 1]
        index -= index & -index
    return count, total


@numba.njit(inline="always")
def _tree_add(tree, index, value, size, base):
    """Add one row of ``value`` at 0-based ``index`` of the Fenwick tree of ``size`` entries
    that starts at row ``base`` of ``tree``."""
    index += 1
    while index <= size:
        tree[base + index, 0] += 1.0
        tree[base + index, 1] += value
        index += index & -index


@numba.njit(inline="always")
def _work(n):
    """The work arrays of :func:`_covariance` for ``n`` rows: the sweep's rows, the tree over
    the blocks of ranks, and the blocks' own trees one after the other (none up to
    ``_ONE_TREE_ROWS`` rows, where each rank is its own block)."""
    bits = _BLOCK_BITS if n > _ONE_TREE_ROWS else 0
    width = 1 << bits
    n_blocks = (n + width - 1) >> bits
    within = np.empty((n_blocks * (width + 1) if bits else 0, 2))
    return np.empty((n, 3)), np.empty((n_blocks + 1, 2)), within


@numba.njit(inline="always")
def _covariance(rows, ranked, xs, x_totals, y_totals, work):
    """``n^2 dCov^2`` of ``x`` and ``y`` (module docstring): ``xs`` is ``x`` sorted, and row
    ``rows[p]`` of ``ranked`` holds the rank, value and ``P`` of the ``y`` paired with
    ``xs[p]``; ``x_totals`` and ``y_totals`` are the sums of each sample and of its ``a``;
    ``work`` is :func:`_work`'s."""
    swept, blocks, within = work
    n = len(rows)
    x_total, a_total = x_totals
    y_total, b_total = y_totals
    # the reads in y's rows first, in a loop of nothing else: their cache misses overlap
    for p in range(n):
        row = rows[p]
        swept[p, 0], swept[p, 1], swept[p, 2] = ranked[row, 0], ranked[row, 1], ranked[row, 2]
    e_term = y_before = x_before = 0.0  # E, and the sums of y and x swept so far
    xy = xy_p = xy_r = x_big_p = ab = 0.0  # sum x y, x y p, x y r, x P, a b
    dominated = 0.0  # D: the rows before p ranked below it in y, in lower blocks of ranks
    blocks[:] = 0.0  # and in its own block
    within[:] = 0.0
    bits = _BLOCK_BITS if len(within) else 0
    width = 1 << bits
    for p in range(n):
        rank, y, y_below = swept[p, 0], swept[p, 1], swept[p, 2]
        x = xs[p]
        e_term += x * y_before
        a = x * (2 * p - n) - 2 * x_before + x_total
        b = y * (2 * rank - n) - 2 * y_below + y_total
        xy += x * y
        xy_p += x * y * p
        xy_r += x * y * rank
        x_big_p += x * y_below
        ab += a * b
        y_before += y
        x_before += x
        block = int(rank) >> bits
        count, total = _tree_sums(blocks, block, 0)
        _tree_add(blocks, block, y, len(blocks) - 1, 0)
        if bits:
            base, offset = block * (width + 1), int(rank) & (width - 1)
            count_within, total_within = _tree_sums(within, offset, base)
            _tree_add(within, offset, y, width, base)
            count, total = count + count_within, total + total_within
        dominated += x * (y * count - total)
    half = 4 * dominated + 2 * e_term + n * xy - 2 * xy_p - 2 * xy_r - x_total * y_total
    half += 2 * x_big_p
    return 2 * half - 2 / n * ab + a_total * b_total / n**2


@numba.njit(cache=True)
def _jobs(columns, pairs, moves, out, start, step):
    """Every ``step``-th job from ``start`` of :func:`_covariances` into ``out``."""
    order, xs, ranked, totals = columns
    n = order.shape[1]
    work = _work(n)
    moved = np.empty(n, dtype=order.dtype)
    for job in range(start, out.size, step):
        c, pair = divmod(job, len(pairs))
        j, k = pairs[pair]
        rows = order[j]
        if moves.shape[1]:  # y's row moves[c, i] at row i
            for p in range(n):
                moved[p] = moves[c, order[j, p]]
            rows = moved
        out[c, pair] = _covariance(rows, ranked[k], xs[j], totals[j], totals[k], work)


@numba.njit(parallel=True, cache=True)
def _covariances(columns, pairs, moves, n_threads):
    """``n^2 dCov^2`` of each pair ``(j, k)`` of ``pairs`` of :func:`_sorted_columns`, with
    column ``k``'s row ``moves[c, i]`` at row ``i`` for each ``c``, ``(n_moves, n_pairs)``;
    ``moves`` of shape ``(1, 0)`` leaves the rows as they are. ``n_threads`` at a time."""
    out = np.empty((len(moves), len(pairs)))
    for thread in numba.prange(n_threads):
        _jobs(columns, pairs, moves, out, thread, n_threads)
    return out


@numba.njit(cache=True)
def _covariances_serial(columns, pairs, moves, n_threads=1):
    """:func:`_covariances` on one thread."""
    out = np.empty((len(moves), len(pairs)))
    _jobs(columns, pairs, moves, out, 0, 1)
    return out


#: ``moves`` of :func:`_covariances` that leave every row in place
_UNMOVED = np.empty((1, 0), dtype=np.intp)
#: the serial and the parallel kernel, for :func:`_numba_kernel` to choose from
_KERNELS = (_covariances_serial, _covariances)


@numba.njit(cache=True, nogil=True)
def _describe_column(x, column_order, j, order, xs, ranked, totals, variances):
    """Row ``j`` of each of :func:`_sorted_columns`' arrays, from the centred column ``x`` and
    the rows in the order of its values."""
    n = len(x)
    x_total = x.sum()
    below, a_total, a_squares = 0.0, 0.0, 0.0
    for p in range(n):
        row = column_order[p]
        order[j, p] = row
        xs[j, p] = x[row]
        ranked[j, row, 0] = p
        ranked[j, row, 1] = x[row]
        ranked[j, row, 2] = below  # the sum of the values ranked below
        a = x[row] * (2 * p - n) - 2 * below + x_total
        a_total += a
        a_squares += a * a
        below += x[row]
    totals[j, 0], totals[j, 1] = x_total, a_total
    # n^2 dVar^2, with sum_ik a_ik^2 = 2 n sum x^2 - 2 (sum x)^2
    variances[j] = 2 * n * (x @ x) - 2 * x_total**2 - 2 / n * a_squares + a_total**2 / n**2


def _sorted_columns(Z):
    """Each column of ``Z`` ``(n, d)`` sorted once, and what every pair reads of it:
    ``(order, sorted, ranked, totals)``, with ``order`` ``(d, n)`` the rows by value,
    ``sorted`` ``(d, n)`` the values in that order, ``ranked`` ``(d, n, 3)`` each row's rank,
    value and ``P``, and ``totals`` ``(d, 2)`` the sums of each column and of its ``a``; and
    ``n^2 dVar^2`` of each column. 36 bytes a value, and a column's copies at a time."""
    n, d = Z.shape
    order = np.empty((d, n), dtype=np.int32 if n < 2**31 else np.int64)
    xs, ranked = np.empty((d, n)), np.empty((d, n, 3))
    totals, variances = np.empty((d, 2)), np.empty(d)

    def describe(j):  # numpy's sort and the kernel leave the GIL: columns in parallel
        x = np.array(Z[:, j], dtype=np.float64)
        x -= x.mean()  # the identities then cancel less
        _describe_column(x, np.argsort(x), j, order, xs, ranked, totals, variances)

    if n * d < _SERIAL_SORT:
        for j in range(d):
            describe(j)
    else:
        with FitThreads(work=n * d, follows=False) as threads:
            with ThreadPoolExecutor(threads.n_threads) as pool:
                list(pool.map(describe, range(d)))
    return (order, xs, ranked, totals), variances


def distance_correlation_pairwise(Z, *, squared=False, block_rows="deprecated"):
    """Distance correlation of every pair of columns.

    Parameters
    ----------
    Z : array-like of shape (n_samples, n_features)
    squared : bool, default=False
        Return squared distance correlations.
    block_rows : int or None
        Ignored. Deprecated in 0.2 and removed in 0.3: the pairs no longer form ``n x n``
        blocks of distances.

    Returns
    -------
    ndarray of shape (n_features, n_features)
        Symmetric, ``dcor.distance_correlation(Z[:, j], Z[:, l])`` at ``(j, l)`` (to 1e-10);
        1 on the diagonal except for constant columns, whose row and column are 0.

    Notes
    -----
    Each column is sorted once; a pair then costs one sweep of ``O(n log n)`` (module
    docstring of :mod:`sklearn_adm.independence._sorting`), and the pairs run in parallel.
    Memory is linear in the rows: 36 bytes a value of ``Z``, and two arrays of ``n`` rows a
    thread. On 2 cores, 64 columns of 1,000,000 rows took 83-91 s and 3.25 GB
    (``benchmarks/bench_large_n.py``).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_adm.metrics import distance_correlation_pairwise
    >>> x = np.linspace(-1, 1, 200)
    >>> distance_correlation_pairwise(np.c_[x, x**2]).round(3)
    array([[1.   , 0.491],
           [0.491, 1.   ]])
    """
    if not isinstance(block_rows, str) or block_rows != "deprecated":
        warnings.warn(
            "block_rows is deprecated in 0.2 and will be removed in 0.3; it has no effect: "
            "the pairs are computed by sorting, in memory linear in the rows.",
            FutureWarning,
            stacklevel=2,
        )
    Z = check_array(Z, dtype=np.float64)
    columns, variances = _sorted_columns(Z)
    n, d = Z.shape
    first, second = np.triu_indices(d, k=1)
    pairs = np.column_stack([first, second])
    with _numba_kernel(n * _SWEEP_WORK, *_KERNELS, calls=len(pairs)) as kernel:
        covariances = kernel(columns, pairs, _UNMOVED, numba.get_num_threads())[0]
    result = np.diag((variances > 0).astype(np.float64))
    result[first, second] = result[second, first] = _ratio(
        covariances, variances[first], variances[second]
    )
    return result if squared else np.sqrt(result)


def permuted_by_sorting(X, Y, orders):
    """The squared distance correlation of the columns of ``X`` and ``Y``
    ``(n_samples, n_pairs)`` paired one by one, and with ``Y``'s rows in each of ``orders``,
    in ``O(n log n)`` a pair and permutation after one sort of each column, in parallel.

    ``orders`` is an ``(n_permutations, n_samples)`` array, or an iterable of such blocks,
    read one at a time (a million rows' orders take 8 MB each). With one pair the statistic
    is the squared distance correlation (``permuted_distance_correlation``'s); with more,
    ``sum_k dCov^2(x_k, y_k) / sum_k dVar(x_k) dVar(y_k)``, in [0, 1].

    Returns
    -------
    observed : float
    permuted : ndarray of shape (n_permutations,)
    """
    X, Y = np.asarray(X).reshape(len(X), -1), np.asarray(Y).reshape(len(Y), -1)
    columns, variances = _sorted_columns(np.hstack([X, Y]))
    n, count = X.shape
    pairs = np.column_stack([np.arange(count), count + np.arange(count)])
    blocks = [orders] if isinstance(orders, np.ndarray) else orders
    with _numba_kernel(n * count * _SWEEP_WORK, *_KERNELS, calls=2) as kernel:
        threads = numba.get_num_threads()
        covariances = np.concatenate(
            [
                kernel(columns, pairs, np.ascontiguousarray(moves, dtype=np.intp), threads)
                for moves in itertools.chain([np.arange(n)[None]], blocks)
            ]
        ).sum(axis=1)
    scale = np.sqrt(np.maximum(variances[:count] * variances[count:], 0.0)).sum()
    if scale == 0:  # a constant sample: no dependence to measure
        return 0.0, np.zeros(len(covariances) - 1)
    statistics = np.maximum(covariances, 0.0) / scale
    return float(statistics[0]), statistics[1:]


def one_vs_rest_by_projections(Z, n_projections, rng):
    """Squared distance correlation of each column of ``Z`` with the others together,
    estimated on random one-dimensional projections of the others, by sorting.

    For ``Y`` in ``q`` dimensions, ``|y| = C_q E_v |v'y|`` with ``v`` uniform on the sphere,
    and the V-statistic is linear in each sample's distances, so that ``dCov^2(x, Y)`` is
    ``C_q`` times the mean of ``dCov^2(x, v'Y)`` over directions, and ``dVar^2(Y)`` is
    ``C_q^2`` times the mean of ``dCov^2(v'Y, w'Y)`` over two independent ones (Huang & Huo
    2017). The estimate is the ratio of the means over ``n_projections`` directions of each
    kind (``C_q`` cancels): ``O(n_projections n log n)`` a column, memory linear in the rows.
    ``rng`` (a ``RandomState``) draws the directions, as random orthonormal frames.

    Returns
    -------
    ndarray of shape (n_features,)
    """
    n, d = Z.shape
    result = np.zeros(d)
    x_pairs = np.column_stack(
        [np.zeros(n_projections, dtype=np.intp), 1 + np.arange(n_projections)]
    )
    y_pairs = np.column_stack(
        [1 + np.arange(n_projections), 1 + n_projections + np.arange(n_projections)]
    )
    pairs = np.vstack([x_pairs, y_pairs])
    with _numba_kernel(n * _SWEEP_WORK, *_KERNELS, calls=len(pairs) * d) as kernel:
        for j in range(d):
            rest = np.delete(Z, j, axis=1)
            # independent frames for v and w: within a frame, directions are orthogonal
            directions = np.hstack([_frames(rng, d - 1, n_projections) for _ in range(2)])
            columns, variances = _sorted_columns(np.column_stack([Z[:, j], rest @ directions]))
            covariances = kernel(columns, pairs, _UNMOVED, numba.get_num_threads())[0]
            across = covariances[:n_projections].mean()  # ~ dCov^2(x, Y) / C_q
            within = covariances[n_projections:].mean()  # ~ dVar^2(Y) / C_q^2
            result[j] = _ratio(across, variances[0], within)
    return result


def _frames(rng, dimension, count):
    """``count`` directions uniform on the sphere of ``dimension`` dimensions ``(dimension,
    count)``, drawn as random orthonormal frames (columns of the Q of a Gaussian matrix's QR,
    signs fixed): each direction is uniform, and a frame's directions share out the sphere, so
    that a mean over them varies less than over independent directions."""
    frames = []
    for _ in range(-(-count // dimension)):
        q, r = np.linalg.qr(rng.standard_normal((dimension, dimension)))
        frames.append(q * np.sign(np.diag(r)))
    return np.hstack(frames)[:, :count]
