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
the rows ranked below ``x_i``. Only ``D`` needs a sweep in ``x``'s order (:func:`_sweep`):
``c`` and ``s`` come from a tree over the blocks of ``y``'s ranks and, within a block, a bit
mask and a Fenwick tree. The rest is a sum over rows of products of a term of ``x`` and one
of ``y`` (``a_i = x_i (2 p_i - n) - 2 X_i + sum x``, ``X_i`` the sum of the ``x`` below
``x_i``, and ``b`` alike), in any order of the rows: the sweep adds it as it goes for a test's
permutations, and every pair of many columns gets it from one matrix product
(:func:`_row_terms`). Sorting each column once serves all its pairs, and the pairs (or a
test's permutations) run in parallel. dcor's ``method="avl"`` (Huo & Székely 2016) computes
the same statistic and sorts both columns at every call.
"""

from pathlib import Path

import numba
import numpy as np
from scipy import stats
from sklearn.utils.validation import check_array

from .._data.scaling import row_blocks
from ._kernels import kernel_threads, run_serially, squared_correlation

__all__ = [
    "distance_correlation_limit",
    "distance_correlation_pairwise",
    "one_vs_rest_by_projections",
    "sorted_permutations",
]


#: ranks in a block of the sweep's two-level structure: a tree over the blocks (250 KB at
#: 1,000,000 rows, read from a core's cache), and within a block a bit mask of the ranks swept
#: (their count by popcount) and a Fenwick tree of their sum (520 bytes)
_BLOCK_BITS = 6
_BLOCK = 1 << _BLOCK_BITS


def _core_cache_bytes(level, default, root="/sys/devices/system/cpu/cpu0/cache"):
    """Bytes of a core's data cache of ``level``, as Linux reports it under ``root`` (sizes
    in KiB, such as ``2048K``); ``default`` where it does not say."""
    for index in sorted(Path(root).glob("index*")):
        try:
            level_of, kind = (index / "level").read_text(), (index / "type").read_text()
            size = (index / "size").read_text().strip()
        except OSError:
            continue
        if level_of.strip() == str(level) and kind.strip() in ("Data", "Unified"):
            if size.endswith("K") and size[:-1].isdigit():
                return int(size[:-1]) * 1024
    return default


#: rows up to which the sweep reads one tree over all ranks, (count, sum) of 16 bytes a rank,
#: rather than the two levels: while the tree fits a core's L2 cache (2 MiB where the system
#: does not say; the crossover measured: design/dcor-one-dimensional)
_ONE_TREE_ROWS = _core_cache_bytes(2, 2**21) // 16
#: the sweep's cost in units of the engines' work per row (for the threads' choice)
_SWEEP_WORK = 64
#: rows of the row terms' matrices at a time (:func:`_row_terms`): 16 MB of features
_FEATURE_BYTES = 2**24
#: columns from which the pairwise matrix takes the row products of its pairs from one matrix
#: product, not from the sweep, up to and beyond ``_ONE_TREE_ROWS`` rows
_PRODUCT_COLUMNS = (32, 16)


@numba.njit(inline="always")
def _tree_sums(tree, index):
    """Sums of the first ``index`` entries of the Fenwick tree of (count, sum) pairs."""
    count, total = 0.0, 0.0
    while index > 0:
        count += tree[index, 0]
        total += tree[index, 1]
        index -= index & -index
    return count, total


@numba.njit(inline="always")
def _tree_add(tree, index, value):
    """Add one row of ``value`` at 0-based ``index`` of the Fenwick tree of pairs."""
    index += 1
    while index < len(tree):
        tree[index, 0] += 1.0
        tree[index, 1] += value
        index += index & -index


@numba.njit(inline="always")
def _block_sum(sums, base, index):
    """Sum of the first ``index`` entries of the block's Fenwick tree at ``sums[base:]``."""
    total = 0.0
    while index > 0:
        total += sums[base + index]
        index -= index & -index
    return total


@numba.njit(inline="always")
def _block_add(sums, base, index, value):
    """Add ``value`` at 0-based ``index`` of the block's Fenwick tree at ``sums[base:]``."""
    index += 1
    while index <= _BLOCK:
        sums[base + index] += value
        index += index & -index


@numba.njit(inline="always")
def _popcount(bits):
    """Set bits of a uint64 (LLVM compiles this form to one instruction where it can)."""
    bits = bits - ((bits >> np.uint64(1)) & np.uint64(0x5555555555555555))
    bits = (bits & np.uint64(0x3333333333333333)) + (
        (bits >> np.uint64(2)) & np.uint64(0x3333333333333333)
    )
    bits = (bits + (bits >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return (bits * np.uint64(0x0101010101010101)) >> np.uint64(56)


@numba.njit(inline="always")
def _x_terms(p, x, x_below, n, x_total):
    """The three terms of ``x`` in :func:`_sweep`'s row products, at rank ``p``."""
    a = x * (2 * p - n) - 2 * x_below + x_total
    return 4 * (x_total - x_below - x) + 2 * n * x - 4 * x * p, x, a


@numba.njit(inline="always")
def _y_terms(r, y, y_below, n, y_total):
    """The three terms of ``y`` in :func:`_sweep`'s row products, at rank ``r``."""
    b = y * (2 * r - n) - 2 * y_below + y_total
    return y, 4 * y_below - 4 * y * r, -2 / n * b


@numba.njit(inline="always")
def _sweep(gathered, xs, x_totals, y_totals, trees, row_products):
    """``n^2 dCov^2`` of ``x`` and ``y``, less its row products and constant unless
    ``row_products``: ``xs`` is ``x`` sorted and ``gathered`` the rank, value and ``P`` of
    the ``y`` paired with each (``P`` read only for the row products).

    The module docstring's identity is ``8 D``, plus a sum over rows of three products of a
    term of ``x`` and one of ``y`` (with ``E = sum_i y_i`` times the sum of the ``x`` ranked
    above ``x_i``), ``sum_i y_i (4 (x_total - X_i - x_i) + 2 n x_i - 4 x_i p_i) + x_i (4 P_i -
    4 y_i r_i) - 2 a_i b_i / n``, plus a constant. ``D`` needs the sweep in ``x``'s order;
    the row products do not, and :func:`_row_terms` computes those of many pairs at once."""
    ranks, ys, y_belows = gathered
    blocks, masks, sums = trees
    blocks[:] = 0.0
    masks[:] = 0
    sums[:] = 0.0
    n = len(xs)
    dominated = x_below = 0.0
    first = second = third = 0.0  # the row products, in separate sums that add in parallel
    bits = _BLOCK_BITS if len(sums) else 0
    for p in range(n):
        rank, y, x = ranks[p], ys[p], xs[p]
        block, offset = rank >> bits, rank & (_BLOCK - 1)
        count, total = _tree_sums(blocks, block)  # rows swept in lower blocks of ranks
        _tree_add(blocks, block, y)
        if bits:  # and in its own block
            bit = np.uint64(1) << np.uint64(offset)
            count += _popcount(masks[block] & (bit - np.uint64(1)))
            masks[block] |= bit
            base = block * (_BLOCK + 1)
            total += _block_sum(sums, base, offset)
            _block_add(sums, base, offset, y)
        dominated += x * (y * count - total)
        if row_products:
            f0, f1, f2 = _x_terms(p, x, x_below, n, x_totals[0])
            g0, g1, g2 = _y_terms(rank, y, y_belows[p], n, y_totals[0])
            first += f0 * g0
            second += f1 * g1
            third += f2 * g2
            x_below += x
    if not row_products:
        return 8 * dominated
    return 8 * dominated + first + second + third + _constant(x_totals, y_totals, n)


@numba.njit(inline="always")
def _constant(x_totals, y_totals, n):
    """The rows' constant in ``n^2 dCov^2``, from the sums of each sample and of its ``a``."""
    return -2 * x_totals[0] * y_totals[0] + x_totals[1] * y_totals[1] / n**2


@numba.njit(cache=True, nogil=True)
def _covariances(columns, pairs, moves, row_products, out, work, first, stop, step):
    """Into ``out`` ``(n_moves, n_pairs)``, at its flat indices ``range(first, stop, step)``,
    ``n^2 dCov^2`` of each pair ``(j, k)`` of ``pairs`` of :func:`_sorted_columns`, with
    column ``k``'s row ``moves[c, i]`` at row ``i`` for each ``c``; ``moves`` of shape
    ``(1, 0)`` leaves the rows as they are. Without ``row_products``, less what
    :func:`_row_terms` gives. ``work``: one thread's arrays (:func:`_work_arrays`)."""
    order, xs, ranked, below, totals = columns
    ranks, ys, y_belows, blocks, masks, within, moved = work
    trees = blocks, masks, within
    for job in range(first, stop, step):
        c, pair = divmod(job, len(pairs))
        j, k = pairs[pair]
        rows = order[j]
        if moves.shape[1]:  # y's row moves[c, i] at row i
            for p in range(len(rows)):
                moved[p] = moves[c, rows[p]]
            rows = moved
        # y's rows in x's order, read in a loop of nothing else: their cache misses overlap
        for p in range(len(rows)):
            row = rows[p]
            ranks[p], ys[p] = int(ranked[k, row, 0]), ranked[k, row, 1]
            if row_products:
                y_belows[p] = below[k, row]
        gathered = ranks, ys, y_belows
        out[c, pair] = _sweep(gathered, xs[j], totals[j], totals[k], trees, row_products)


def _work_arrays(order, moved):
    """One thread's work arrays of :func:`_covariances` for rows of ``order``'s type: the
    rank, value and ``P`` of each row of ``y`` in ``x``'s order, the tree over the blocks of
    ranks, each block's mask and its tree of sums, and where ``moved`` the moved rows. Made
    here, not in the kernel: numba compiles an allocation with the kernel, and compiling is
    most of a fresh environment's first call (design/first-score)."""
    n = order.shape[1]
    bits = _BLOCK_BITS if n > _ONE_TREE_ROWS else 0
    n_blocks = (n + (1 << bits) - 1) >> bits
    return (
        np.empty(n, dtype=order.dtype),
        np.empty(n),
        np.empty(n),
        np.empty((n_blocks + 1, 2)),
        np.empty(n_blocks, dtype=np.uint64),
        np.empty(n_blocks * (_BLOCK + 1) if bits else 0),
        np.empty(n if moved else 0, dtype=order.dtype),
    )


def _covariances_by(run, columns, pairs, moves, row_products):
    """:func:`_covariances` by ``run`` (a runner of :mod:`._kernels`), ``(n_moves,
    n_pairs)``."""
    out = np.empty((len(moves), len(pairs)))
    room = lambda: (_work_arrays(columns[0], moves.shape[1] > 0),)  # noqa: E731
    run(_covariances, out.size, room, columns, pairs, moves, row_products, out, interleave=True)
    return out


@numba.njit(cache=True)
def _terms(ranked, below, totals, columns, start, as_x, out):
    """Into ``out`` ``(len(columns), 3, rows)``, the three terms of each of ``columns`` at
    the ``rows`` from ``start``, as the ``x`` (:func:`_x_terms`) or the ``y``
    (:func:`_y_terms`) of a pair."""
    n = ranked.shape[1]
    for c, column in enumerate(columns):
        total = totals[column, 0]
        for i in range(out.shape[2]):
            rank, value = ranked[column, start + i, 0], ranked[column, start + i, 1]
            value_below = below[column, start + i]
            if as_x:
                terms = _x_terms(rank, value, value_below, n, total)
            else:
                terms = _y_terms(rank, value, value_below, n, total)
            out[c, 0, i], out[c, 1, i], out[c, 2, i] = terms


def _row_terms(columns, pairs):
    """The row products and constant of :func:`_sweep` for ``pairs`` of many columns at once:
    sums over rows in any order, so that they form a product of each column's terms as an
    ``x`` and as a ``y`` (on the BLAS, a few rows at a time)."""
    _, _, ranked, below, totals = columns
    n = ranked.shape[1]
    firsts, first = np.unique(pairs[:, 0], return_inverse=True)
    seconds, second = np.unique(pairs[:, 1], return_inverse=True)
    products = np.zeros((len(firsts), len(seconds)))
    for part in row_blocks(n, max(1, _FEATURE_BYTES // (24 * (len(firsts) + len(seconds))))):
        rows = min(part.stop, n) - part.start
        x_terms, y_terms = np.empty((len(firsts), 3, rows)), np.empty((len(seconds), 3, rows))
        _terms(ranked, below, totals, firsts, part.start, True, x_terms)
        _terms(ranked, below, totals, seconds, part.start, False, y_terms)
        products += x_terms.reshape(len(firsts), -1) @ y_terms.reshape(len(seconds), -1).T
    # the same arithmetic by numpy on the pairs' arrays: numba would compile it for arrays
    constant = _constant.py_func(totals[pairs[:, 0]].T, totals[pairs[:, 1]].T, n)
    return products[first, second] + constant


#: ``moves`` of :func:`_covariances` that leave every row in place
_UNMOVED = np.empty((1, 0), dtype=np.intp)


@numba.njit(cache=True, nogil=True)
def _describe_column(x, column_order, j, order, xs, ranked, below, totals, variances):
    """Row ``j`` of each of :func:`_sorted_columns`' arrays, from the centred column ``x`` and
    the rows in the order of its values."""
    n = len(x)
    x_total = squares = 0.0  # sums in order: the BLAS's dot product rounds as each CPU's kernel
    for value in x:
        x_total += value
        squares += value * value
    value_below, a_total, a_squares = 0.0, 0.0, 0.0
    for p in range(n):
        row = column_order[p]
        order[j, p] = row
        xs[j, p] = x[row]
        ranked[j, row, 0] = p
        ranked[j, row, 1] = x[row]
        below[j, row] = value_below  # the sum of the values ranked below
        a = _x_terms(p, x[row], value_below, n, x_total)[2]
        a_total += a
        a_squares += a * a
        value_below += x[row]
    totals[j, 0], totals[j, 1] = x_total, a_total
    # n^2 dVar^2, with sum_ik a_ik^2 = 2 n sum x^2 - 2 (sum x)^2
    variances[j] = 2 * n * squares - 2 * x_total**2 - 2 / n * a_squares + a_total**2 / n**2


def _empty_columns(n, d):
    """The arrays of :func:`_sorted_columns` for ``d`` columns of ``n`` rows."""
    order = np.empty((d, n), dtype=np.int32 if n < 2**31 else np.int64)
    return order, np.empty((d, n)), np.empty((d, n, 2)), np.empty((d, n)), np.empty((d, 2))


def _sorted_columns(Z, columns=None, run=None):
    """Each column of ``Z`` ``(n, d)`` sorted once, and what every pair reads of it:
    ``(order, sorted, ranked, below, totals)``, with ``order`` ``(d, n)`` the rows by value,
    ``sorted`` ``(d, n)`` the values in that order, ``ranked`` ``(d, n, 2)`` each row's rank
    and value, ``below`` ``(d, n)`` each row's ``P``, and ``totals`` ``(d, 2)`` the sums of
    each column and of its ``a``; and ``n^2 dVar^2`` of each column. 36 bytes a value, and a
    column's copies at a time; ``columns`` of :func:`_empty_columns` are filled in place (a
    first write of fresh memory costs about as much as the sorts). ``run``: the runner of
    :mod:`._kernels` of the caller's work, where it has one."""
    n, d = Z.shape
    columns = _empty_columns(n, d) if columns is None else columns
    order, xs, ranked, below, totals = columns
    variances = np.empty(d)

    def describe(first, stop, step):  # numpy's sort and the kernel leave the GIL
        for j in range(first, stop, step):
            x = np.array(Z[:, j], dtype=np.float64)
            x -= x.mean()  # the identities then cancel less
            _describe_column(x, np.argsort(x), j, order, xs, ranked, below, totals, variances)

    if run is not None:
        run(describe, d, tuple)
        return columns, variances
    with kernel_threads(n * d) as run:  # small work stays on the calling thread
        run(describe, d, tuple)
    return columns, variances


def distance_correlation_pairwise(Z, *, squared=False):
    """Distance correlation of every pair of columns.

    Parameters
    ----------
    Z : array-like of shape (n_samples, n_features)
    squared : bool, default=False
        Return squared distance correlations.

    Returns
    -------
    ndarray of shape (n_features, n_features)
        Symmetric, ``dcor.distance_correlation(Z[:, j], Z[:, l])`` at ``(j, l)`` (to 1e-10);
        1 on the diagonal except for constant columns, whose row and column are 0.

    Notes
    -----
    Each column is sorted once; a pair then costs one sweep of ``O(n log n)`` (module
    docstring of :mod:`sklearn_adm.independence._sorting`), and the pairs run in parallel.
    Memory is linear in the rows: 36 bytes a value of ``Z``, and three arrays of ``n`` rows a
    thread. Times are on the benchmarks page (``benchmarks/bench_large_n.py``).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_adm.metrics import distance_correlation_pairwise
    >>> x = np.linspace(-1, 1, 200)
    >>> distance_correlation_pairwise(np.c_[x, x**2]).round(3)
    array([[1.   , 0.491],
           [0.491, 1.   ]])
    """
    Z = check_array(Z, dtype=np.float64)
    columns, variances = _sorted_columns(Z)
    n, d = Z.shape
    # the pairs of each column k together: k's rows are read at random, and stay in cache
    second, first = np.tril_indices(d, k=-1)
    pairs = np.column_stack([first, second])
    by_product = d >= _PRODUCT_COLUMNS[n > _ONE_TREE_ROWS]
    with kernel_threads(n * _SWEEP_WORK * len(pairs)) as run:
        covariances = _covariances_by(run, columns, pairs, _UNMOVED, not by_product)[0]
    if by_product:  # on the caller's BLAS threads, whatever the load
        covariances += _row_terms(columns, pairs)
    result = np.diag((variances > 0).astype(np.float64))
    result[first, second] = result[second, first] = squared_correlation(
        covariances, variances[first], variances[second]
    )
    return result if squared else np.sqrt(result)


def _sorted_pairs(X, Y):
    """The columns of ``X`` and ``Y`` ``(n, k)`` sorted (:func:`_sorted_columns`), their
    ``n^2 dVar^2``, the pairs ``(k, 2)`` of X's column j with Y's, and the statistic's scale
    ``sum_j dVar(x_j) dVar(y_j)`` (times ``n^2``)."""
    X, Y = np.asarray(X).reshape(len(X), -1), np.asarray(Y).reshape(len(Y), -1)
    count = X.shape[1]
    columns, variances = _sorted_columns(np.hstack([X, Y]))
    pairs = np.column_stack([np.arange(count), count + np.arange(count)])
    scale = np.sqrt(np.maximum(variances[:count] * variances[count:], 0.0)).sum()
    return columns, variances, pairs, scale


def sorted_permutations(X, Y, sweeps):
    """The squared distance correlation of the columns of ``X`` and ``Y``
    ``(n_samples, n_pairs)`` paired one by one, after one sort of each column, and a function
    that gives it with ``Y``'s rows in each of ``orders``, in ``O(n log n)`` a pair and
    permutation, in parallel.

    ``orders`` is an ``(n_permutations, n_samples)`` array, or an iterable of such blocks,
    read one at a time (a million rows' orders take 8 MB each). With one pair the statistic
    is the squared distance correlation (``permuted_distance_correlation``'s); with more,
    ``sum_k dCov^2(x_k, y_k) / sum_k dVar(x_k) dVar(y_k)``, in [0, 1]. ``sweeps``: the
    sweeps of every column pair of the whole test, the observed one included, which share
    one choice of threads.

    Returns
    -------
    observed : float
    permuted : callable, from ``orders`` to an ndarray of shape (n_permutations,)
    """
    columns, variances, pairs, scale = _sorted_pairs(X, Y)
    n, count = len(X), len(pairs)

    def permuted(orders):
        blocks = [orders] if isinstance(orders, np.ndarray) else orders
        with kernel_threads(n * count * _SWEEP_WORK * sweeps) as run:
            covariances = [
                _covariances_by(
                    run, columns, pairs, np.ascontiguousarray(moves, dtype=np.intp), True
                )
                for moves in blocks
            ]
        covariances = np.concatenate(covariances).sum(axis=1)
        if scale == 0:  # a constant sample: no dependence to measure
            return np.zeros(len(covariances))
        return np.maximum(covariances, 0.0) / scale

    return float(permuted(np.arange(n)[None])[0]), permuted


def distance_correlation_limit(X, Y):
    """The statistic of :func:`sorted_permutations` of the columns of ``X`` and ``Y``
    ``(n, k)``, paired one by one, and two p-values of their independence from its limit,
    after one sort of each column: ``(statistic, p_gamma, p_bound, null_mean)``.

    Under independence ``T / n``, with ``T = n^2 dCov^2`` of a pair, tends to
    ``sum_j l_j N_j^2`` (Székely et al. 2007, Theorem 5), with ``sum_j l_j = E|x - x'|
    E|y - y'|`` and ``sum_j l_j^2 = dVar^2(x) dVar^2(y)``; the sum of the pairs' ``T`` is
    again a quadratic form of a Gaussian limit, ``sum_j m_j N_j^2``. ``p_gamma`` (one pair
    only; None for more, whose variance needs the pairs' cross terms) is the tail of the
    gamma law of the limit's mean and variance (as Gretton et al. 2008 approximate HSIC's
    null), with the mean ``E[T] = a.. b.. / (n^2 (n - 1))`` of ``T`` over the rows'
    permutations. ``p_bound`` is that of ``sum T / sum E[T]`` against chi-square with one
    degree of freedom, whose tail bounds such a limit's for any weights at p-values up to
    0.215 (Székely & Bakirov 2003): valid, and far above the true p-value unless one
    weight carries the sum. ``null_mean``: ``sum E[T]`` on the statistic's scale."""
    columns, variances, pairs, scale = _sorted_pairs(X, Y)
    n, count = len(X), len(pairs)
    covariance = _covariances_by(run_serially, columns, pairs, _UNMOVED, True)[0].sum()
    totals = columns[4][:, 1]
    mean = (totals[:count] * totals[count:]).sum() / (n**2 * (n - 1))
    if scale == 0 or mean <= 0:  # a constant sample: no dependence to measure
        return 0.0, 1.0, 1.0, 0.0
    statistic = max(covariance, 0.0)
    p_gamma = None
    if count == 1:
        spread = 2 * variances[0] * variances[1] / n**2  # the variance of T
        p_gamma = float(stats.gamma.sf(statistic, mean**2 / spread, scale=spread / mean))
    p_bound = float(stats.chi2.sf(statistic / mean, 1))
    return statistic / scale, p_gamma, p_bound, mean / scale


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
    columns = _empty_columns(n, len(pairs) + 1)
    with kernel_threads(n * _SWEEP_WORK * len(pairs) * d) as run:
        for j in range(d):
            rest = np.delete(Z, j, axis=1)
            # independent frames for v and w: within a frame, directions are orthogonal
            directions = np.hstack([_frames(rng, d - 1, n_projections) for _ in range(2)])
            projected = np.column_stack([Z[:, j], rest @ directions])
            columns, variances = _sorted_columns(projected, columns, run)
            covariances = _covariances_by(run, columns, pairs, _UNMOVED, True)[0]
            across = covariances[:n_projections].mean()  # ~ dCov^2(x, Y) / C_q
            within = covariances[n_projections:].mean()  # ~ dVar^2(Y) / C_q^2
            result[j] = squared_correlation(across, variances[0], within)
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
