"""What the conditional test ``DependenceScorer.test(X, Y, Z=...)`` adds to the two-sample
test: residuals of ``X`` and ``Y`` given ``Z``, and groups of rows with nearly equal ``Z``
within which the permutations shuffle.

X is independent of Y given Z when, at every value of Z, what is left of X tells nothing of
what is left of Y. The test (i) predicts each column of X and of Y from Z by a kernel ridge
regression, each row by a regression fitted on the other half of the rows (cross-fitting: a
row's own noise never enters its prediction), and (ii) tests the residuals for independence
with the two-sample test, whose permutations shuffle Y's rows only within groups of rows
whose Z is nearly equal (a local, conditional permutation, as Berrett et al. 2020 permute).
The residuals remove the part of the dependence that Z drives smoothly, which would
otherwise need very small groups; the groups keep, in the null, whatever the regressions
left of Z's part. Where every group's rows share one value of Z (a discrete Z, as many rows
as values), the permuted data have the distribution of the data under the null and the test
is exact; for a continuous Z it is approximate, the closer the more rows (the groups get
tighter).

Dependence whose form changes with Z can average out over all rows: with ``Y = Z +
0.6 cos(2X) + noise`` and ``X = Z + e``, Y's residual is ``cos(2Z + 2e)`` less its mean,
whose relation to ``e`` turns with Z. The distance test therefore also computes its
statistic within blocks of about ``LOCAL_BLOCK_ROWS`` rows of nearly equal Z, where the relation
holds still (:func:`local_statistics`), and the learned test's critic reads Z beside X's
residuals. The permutation groups lie within the blocks, so every statistic is permuted
alike.
"""

import numba
import numpy as np
from sklearn.cluster import KMeans
from sklearn.preprocessing import StandardScaler, scale
from sklearn.utils import check_random_state

from .._runtime.threads import one_thread
from ._distance import blockwise_distance_correlation

#: rows per group of nearly equal Z: the permutations shuffle within them
GROUP_ROWS = 8
#: rows per block of nearly equal Z, within which the local statistics are computed
#: (design/defaults)
LOCAL_BLOCK_ROWS = 64
#: least predicted square of a residual, as a share of the mean square: a prediction near 0
#: (a poor fit where few rows are) would blow that residual up
SCALE_FLOOR = 0.05
#: kernel widths tried for the regressions on Z, per standardised column of Z
BANDWIDTHS = (0.1, 0.2, 0.35, 0.6, 1.0, 2.0)
#: rows whose kernel columns are the regressions' features (Nystroem's components)
LANDMARKS = 200
#: rows predicted at a time: their distances and kernel columns (for 100 landmarks, 400 KiB)
#: stay in a core's cache from one pass to the next
_PREDICT_ROWS = 512
#: ridge penalties tried, per row
PENALTIES = np.logspace(-6, -1, 11)
#: rows beyond which the cells of a multi-column Z are cut at medians (a k-d tree's leaves, in
#: O(n log n)) instead of by k-means, whose cost grows as the rows times the cells
KMEANS_ROWS = 16_384


class LocalConditioning:
    """What the permutation test given ``Z`` computes from ``Z`` alone, for any number of
    samples tested given the same ``Z``: for two folds of the rows and a seed
    (:func:`draw_folds`), the groups and blocks of nearly equal Z (:func:`local_cells`), and
    the residuals of any columns given Z, each column's the same whatever columns it is
    computed with (the regressions choose their bandwidth and penalty per column)."""

    def __init__(self, Z, folds, seed):
        self.Z, self.folds, self.seed = Z, folds, seed
        self.groups, self.blocks = local_cells(Z, folds, seed)
        self.bases = {}  # each fold's SmoothBasis, made at the first regression

    @property
    def nbytes(self):
        """Bytes of the arrays kept."""
        arrays = (self.Z, self.folds, self.groups, self.blocks)
        return sum(a.nbytes for a in arrays) + sum(b.nbytes for b in self.bases.values())

    def residuals(self, A):
        """``A`` less its cross-fitted prediction from Z (:func:`cross_fitted_residuals`)."""
        return cross_fitted_residuals(A, self.Z, self.folds, self.seed, self.bases)

    def locally_scaled(self, residuals):
        """The residuals over their scale given Z (:func:`locally_scaled`)."""
        return locally_scaled(residuals, self.Z, self.folds, self.seed, self.bases)

    def as_x(self, residuals):
        """X's residuals less their linear fit on Z within each group (:func:`linear_within`)."""
        return linear_within(residuals, self.Z, self.groups)

    def as_y(self, residuals):
        """Y's residuals less their mean within each group (:func:`centred_within`)."""
        return centred_within(residuals, self.groups)


def draw_folds(n, rng):
    """Two folds of ``n`` rows (a label per row) and a seed for the regressions and cells,
    drawn from ``rng``."""
    folds = rng.permutation(n) % 2
    return folds, int(rng.randint(np.iinfo(np.int32).max))


def cross_fitted_residuals(A, Z, folds, random_state, bases=None):
    """``A`` less its prediction from ``Z`` ``(n, q)``, each fold's rows predicted by a
    model fitted on the other folds' rows (``folds``: a fold label per row): a kernel ridge
    regression (:func:`smooth_regression`). ``bases``: a dict of each fold's
    :class:`SmoothBasis`, used and filled, for regressions of other columns on the same Z."""
    bases = {} if bases is None else bases
    residuals = np.empty_like(A)
    with one_thread():  # small products: threads would spin-wait
        for fold in np.unique(folds):
            fit, predict = folds != fold, folds == fold
            if fold not in bases:
                bases[fold] = SmoothBasis(Z[fit], random_state)
            regression = bases[fold].regression(A[fit])
            residuals[predict] = A[predict] - regression(Z[predict])
    return residuals


def locally_scaled(R, Z, folds, random_state, bases=None):
    """The residuals ``R`` divided by their scale given ``Z``: the square root of a
    cross-fitted prediction of ``R**2`` from ``Z`` (:func:`cross_fitted_residuals`), at least
    ``SCALE_FLOOR`` times the mean square. Under the null this keeps X and Y independent given Z
    (it is a function of each and of Z), and it removes the part of their dependence on Z
    that is a scale."""
    squares = R**2
    scale = squares - cross_fitted_residuals(squares, Z, folds, random_state, bases)
    return R / np.sqrt(np.maximum(scale, SCALE_FLOOR * squares.mean(axis=0)))


def smooth_regression(Z, A, random_state, landmarks=LANDMARKS, select_rows=None):
    """A predictor of each column of ``A`` from ``Z``: ridge regression on Gaussian-kernel
    features of the standardised ``Z`` (Nystroem's, on at most ``landmarks`` rows), its
    bandwidth and penalty chosen per column by the leave-one-out error, in closed form from
    one eigendecomposition per bandwidth. At 500 rows with two columns of Z,
    gradient-boosted trees left enough of a smooth function of Z in X's and Y's residuals
    for the test to reject 0.10-0.13 of true nulls; this leaves 0.05 (200 draws,
    ``benchmarks/bench_conditional.py``).

    The bandwidths are compared on the first ``select_rows`` rows (all where None), and
    those chosen fitted again on all rows. All that depends on Z alone is
    :class:`SmoothBasis`'s, kept for the regressions of other columns on the same Z."""
    return SmoothBasis(Z, random_state, landmarks).regression(A, select_rows)


class SmoothBasis:
    """What :func:`smooth_regression` computes from ``Z`` alone: the standardised Z, the
    landmarks and their squared distances, and for each bandwidth (and rows fitted) the
    centred kernel features with their eigendecomposition (:class:`_RidgeDesign`), made at
    first use. A regression of a column then costs a few products with the features.
    The squared distances to the landmarks are computed once for every bandwidth, and a
    prediction is one product of the new rows' kernel columns with weights folded from the
    Nystroem map and the coefficients."""

    def __init__(self, Z, random_state, landmarks=LANDMARKS):
        self.n_samples = len(Z)
        self.scaler = StandardScaler().fit(Z)
        Z = self.scaler.transform(Z)
        # the landmarks Nystroem(random_state=...) draws
        order = check_random_state(random_state).permutation(len(Z))
        self.centres = Z[order[: min(len(Z), landmarks)]]
        self._to_centres = _squared_distances(Z, self.centres)
        self._between = _squared_distances(self.centres, self.centres)
        self._gammas = [1 / (2 * width**2 * Z.shape[1]) for width in BANDWIDTHS]
        self._normalizations = {}
        self._designs = {}  # (bandwidth, rows fitted): features' means and their design

    @property
    def nbytes(self):
        """Bytes of the arrays kept."""
        designs = sum(mean.nbytes + design.nbytes for mean, design in self._designs.values())
        normalizations = sum(a.nbytes for a in self._normalizations.values())
        return self._to_centres.nbytes + self._between.nbytes + normalizations + designs

    def _normalization(self, width):
        if width not in self._normalizations:
            kernel = np.exp(-self._gammas[width] * self._between)
            self._normalizations[width] = _nystroem_normalization(kernel)
        return self._normalizations[width]

    def _design(self, width, stop):
        """The centred kernel features' means and :class:`_RidgeDesign` of the first
        ``stop`` rows at one bandwidth."""
        if (width, stop) not in self._designs:
            kernel = np.multiply(self._to_centres[:stop], -self._gammas[width])
            phi = np.exp(kernel, out=kernel) @ self._normalization(width)
            phi_mean = phi.mean(axis=0)
            phi -= phi_mean
            self._designs[width, stop] = phi_mean, _RidgeDesign(phi, PENALTIES * len(phi))
        return self._designs[width, stop]

    def _fit(self, A, width, stop):
        """gamma, weights on the kernel columns, intercepts and LOO errors of one bandwidth
        fitted on the first ``stop`` rows of ``A``"""
        phi_mean, design = self._design(width, stop)
        centre = A[:stop].mean(axis=0)
        coefficients, errors = design.solve(A[:stop] - centre)
        intercepts = centre - phi_mean @ coefficients
        return self._gammas[width], self._normalization(width) @ coefficients, intercepts, errors

    def regression(self, A, select_rows=None):
        """The predictor of :func:`smooth_regression` of ``A`` (a row per row of Z)."""
        n = self.n_samples
        selection = n if select_rows is None else select_rows
        fits = [self._fit(A, width, selection) for width in range(len(BANDWIDTHS))]
        best = np.argmin([errors for *_, errors in fits], axis=0)  # a bandwidth per column
        if selection < n:
            for width in np.unique(best):
                fits[width] = self._fit(A, width, n)
        scaler, centres = self.scaler, self.centres

        def predict(Z_new):
            Z_new = scaler.transform(Z_new)
            prediction = np.empty((len(Z_new), A.shape[1]))
            widths = np.unique(best)
            # a chunk of rows at a time, in buffers made once (a new one per chunk costs its
            # page faults)
            to_new = np.empty((min(len(Z_new), _PREDICT_ROWS), len(centres)))
            kernel = np.empty_like(to_new)
            for start in range(0, len(Z_new), _PREDICT_ROWS):
                rows = slice(start, start + _PREDICT_ROWS)
                block = Z_new[rows]
                distances = _squared_distances(block, centres, out=to_new[: len(block)])
                values = kernel[: len(block)]
                for width in widths:
                    gamma, weights, intercepts, _ = fits[width]
                    columns = best == width
                    np.exp(np.multiply(distances, -gamma, out=values), out=values)
                    prediction[rows, columns] = values @ weights[:, columns] + intercepts[columns]
            return prediction

        return predict


def _squared_distances(A, B, out=None):
    """``|a_i - b_j|^2`` ``(len(A), len(B))`` (into ``out`` where given), as sums of squared
    differences: one pass, where numpy's expansion ``|a|^2 + |b|^2 - 2 a b`` made four over
    a prediction's chunk of rows (and could round below zero)."""
    out = np.empty((len(A), len(B))) if out is None else out
    _differences_squared(np.ascontiguousarray(A), np.ascontiguousarray(B.T), out)
    return out


@numba.njit(cache=True)
def _differences_squared(A, B_columns, out):
    """``out[i, j] = sum_k (A[i, k] - B_columns[k, j])^2``."""
    for i in range(A.shape[0]):
        row = out[i]
        for j in range(len(row)):
            row[j] = 0.0
        for k in range(A.shape[1]):
            a = A[i, k]
            column = B_columns[k]
            for j in range(len(row)):
                difference = a - column[j]
                row[j] += difference * difference


def _nystroem_normalization(kernel):
    """``kernel^(-1/2)`` of the landmarks' kernel matrix, its eigenvalues floored at 1e-12,
    as :class:`sklearn.kernel_approximation.Nystroem` computes it (there by an SVD)."""
    values, vectors = np.linalg.eigh(kernel)
    return (vectors / np.sqrt(np.maximum(np.abs(values), 1e-12))) @ vectors.T


def _ridge_loo(phi, A, penalties):
    """Ridge regressions of the centred columns of ``A`` on the centred features ``phi``:
    for each column the coefficients ``(m,)`` of the penalty with the least leave-one-out
    error, and that error (:class:`_RidgeDesign`)."""
    return _RidgeDesign(phi, penalties).solve(A)


class _RidgeDesign:
    """What the ridge regressions on the centred features ``phi`` ``(n, m)`` under each of
    ``penalties`` share, whatever the columns regressed. With ``phi = U S V^T``, the fit
    under penalty ``l`` is ``U diag(s^2 / (s^2 + l)) U^T a`` and row i's leave-one-out
    residual is its residual over ``1 - h_i``, ``h`` the hat matrix's diagonal (plus ``1/n``
    for the intercept)."""

    def __init__(self, phi, penalties):
        squares, V = np.linalg.eigh(phi.T @ phi)
        keep = squares > 1e-10 * squares.max()
        self.squares, self.V = squares[keep], V[:, keep]
        self.singular = np.sqrt(self.squares)
        self.U = phi @ self.V
        self.U /= self.singular
        self.penalties = penalties
        self.shrink = self.squares / (self.squares + penalties[:, None])  # (penalties, r)
        # a row fitted exactly (leverage 1: a fold of one row) has no leave-one-out residual
        leverage = np.minimum(self.shrink @ (self.U**2).T + 1 / len(phi), 1 - 1e-9)
        self.leverage = leverage  # (penalties, n)

    @property
    def nbytes(self):
        """Bytes of the arrays kept."""
        return sum(a.nbytes for a in (self.V, self.U, self.shrink, self.leverage))

    def solve(self, A):
        """For each centred column of ``A`` ``(n, q)``, the coefficients ``(m,)`` of the
        penalty with the least leave-one-out error, and that error."""
        projections = self.U.T @ A  # (r, q)
        fitted = self.U @ (self.shrink[:, :, None] * projections)  # (penalties, n, q)
        # (in place: new arrays of this size cost page faults)
        loo_residuals = np.subtract(A, fitted, out=fitted)
        loo_residuals /= (1 - self.leverage)[:, :, None]
        errors = np.mean(np.square(loo_residuals, out=loo_residuals), axis=1)
        best = np.argmin(errors, axis=0)  # a penalty per column
        weights = self.singular[:, None] / (self.squares[:, None] + self.penalties[best][None, :])
        coefficients = self.V @ (weights * projections)
        return coefficients, np.min(errors, axis=0)


def local_cells(Z, folds, random_state):
    """Groups and blocks of rows of one fold whose ``Z`` is nearly equal: a group label
    per row, about ``GROUP_ROWS`` rows to a group, within which the permutations shuffle;
    and a block label per row, about ``LOCAL_BLOCK_ROWS`` rows to a block (at most twice that),
    over which the local statistics are computed. Each group lies within one block.

    Where Z takes few values, the rows of one value form one group (exact), and its
    blocks are random parts of those rows. One column is cut by its order; several are
    clustered (k-means on standardised columns; beyond ``KMEANS_ROWS`` rows, cut at medians)."""
    rng = np.random.RandomState(random_state)
    groups, blocks = np.empty((2, len(Z)), dtype=np.int64)
    for fold in np.unique(folds):
        rows = np.flatnonzero(folds == fold)
        groups[rows] = _cells_of(Z[rows], GROUP_ROWS, random_state)
        cells = _cells_of(Z[rows], LOCAL_BLOCK_ROWS, random_state)
        blocks[rows] = _at_most(cells, 2 * LOCAL_BLOCK_ROWS, rng)
    # labels so far are per fold; a group that a block's edge cuts becomes two groups
    groups = np.unique(np.c_[folds, blocks, groups], axis=0, return_inverse=True)[1]
    blocks = np.unique(np.c_[folds, blocks], axis=0, return_inverse=True)[1]
    return groups.reshape(-1), blocks.reshape(-1)


def _cells_of(Z, rows_per_cell, random_state):
    values, inverse = np.unique(Z, axis=0, return_inverse=True)
    n_cells = max(1, len(Z) // rows_per_cell)
    if len(values) <= max(1, len(Z) // GROUP_ROWS):  # discrete Z: one cell per value, exact
        return inverse.reshape(-1)
    if Z.shape[1] == 1:
        order = np.argsort(Z[:, 0], kind="stable")
        labels = np.empty(len(Z), dtype=np.int64)
        labels[order] = np.arange(len(Z)) * n_cells // len(Z)
        return labels
    scaled = StandardScaler().fit_transform(Z)
    if len(Z) > KMEANS_ROWS:
        return _median_cells(scaled, rows_per_cell)
    with one_thread("openmp"):  # small: threads would spin-wait
        return KMeans(n_cells, n_init=1, random_state=random_state).fit(scaled).labels_


def _median_cells(Z, rows_per_cell):
    """A cell label per row: the rows cut in two at the median of their widest column, and
    each half again, until a cell holds fewer than 1.5 ``rows_per_cell`` rows."""
    labels = np.empty(len(Z), dtype=np.int64)
    parts, label = [np.arange(len(Z))], 0
    while parts:
        rows = parts.pop()
        if len(rows) < 1.5 * rows_per_cell:
            labels[rows], label = label, label + 1
            continue
        widest = np.argmax(np.ptp(Z[rows], axis=0))
        rows = rows[np.argsort(Z[rows, widest], kind="stable")]
        parts += [rows[: len(rows) // 2], rows[len(rows) // 2 :]]
    return labels


def _at_most(labels, size, rng):
    """``labels`` with each cell of more than ``size`` rows cut at random into parts of at
    most ``size`` rows (the rows of one value of a discrete Z are exchangeable)."""
    _, labels, counts = np.unique(labels, return_inverse=True, return_counts=True)
    labels = labels.reshape(-1)
    parts = np.ceil(counts / size).astype(np.int64)
    part = np.empty(len(labels), dtype=np.int64)
    for cell in np.flatnonzero(parts > 1):
        rows = np.flatnonzero(labels == cell)
        part[rows] = rng.permutation(len(rows)) % parts[cell]
    part[parts[labels] == 1] = 0
    return labels * parts.max() + part


def local_statistics(X, Y, blocks, orders):
    """The local statistics of the distance test, observed ``(3,)`` and with Y's rows in
    each of ``orders`` ``(n_permutations, 3)``, each averaged over the blocks of nearly
    equal Z: the squared distance correlation of X and Y within each block; the same
    correlation of Gaussian kernels, which sees a relation that oscillates within a block
    (the cosine above; design/conditional-test); and the squared
    distance correlation of their magnitudes (each column standardised, then its absolute
    value), which sees a variance of Y that X drives in some blocks only. Cost
    ``O(n LOCAL_BLOCK_ROWS)`` per permutation."""
    magnitudes = [np.abs(scale(A)) for A in (X, Y)]  # a constant column: zeros
    statistics = [
        blockwise_distance_correlation(X, Y, blocks, orders),
        blockwise_distance_correlation(X, Y, blocks, orders, kernel="gaussian"),
        blockwise_distance_correlation(*magnitudes, blocks, orders),
    ]
    observed, permuted = zip(*statistics, strict=True)
    return np.array(observed), np.column_stack(permuted)


def random_unions(blocks, rows, rng):
    """Blocks joined at random into unions of about ``rows`` rows: a label per row."""
    _, labels = np.unique(blocks, return_inverse=True)
    n_unions = max(1, round(len(blocks) / rows))
    return (rng.permutation(labels.max() + 1) % n_unions)[labels.reshape(-1)]


def centred_within(A, groups):
    """``A`` less the mean of each column over its row's group: what is left of a smooth
    function of Z in the residuals (nearly constant within a group) is removed, and
    shuffling rows within groups commutes with it."""
    _, labels, counts = np.unique(groups, return_inverse=True, return_counts=True)
    sums = np.zeros((len(counts), A.shape[1]))
    np.add.at(sums, labels.reshape(-1), A)
    return A - (sums / counts[:, None])[labels.reshape(-1)]


def linear_within(A, Z, groups):
    """``A`` less its least-squares fit on ``[1, Z]`` within each group with more rows than
    that fit has coefficients (the others: less their mean). Within a group the part of a
    smooth function of Z that is left is nearly linear in Z; ``Y``'s part and ``X``'s would
    be dependent through it, and the shuffles, which do not keep it, would count that
    against the null. Only ``X`` is fitted so: ``Y``'s rows move."""
    result = np.empty_like(A)
    for group in np.unique(groups):
        rows = np.flatnonzero(groups == group)
        design = np.ones((len(rows), 1))
        if len(rows) > Z.shape[1] + 1:
            design = np.hstack([design, Z[rows] - Z[rows].mean(axis=0)])
        coefficients = np.linalg.lstsq(design, A[rows], rcond=None)[0]
        result[rows] = A[rows] - design @ coefficients
    return result
