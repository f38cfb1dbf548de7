"""The conditional distance test at many rows: an asymptotic null in place of permutations.

From :data:`ASYMPTOTIC_ROWS` rows, ``DependenceScorer("dcor").test(X, Y, Z=Z)``:

1. predicts X and Y from Z by the kernel ridge regression of
   :func:`~sklearn_adm.independence._conditional.smooth_regression`, fitted on some
   thousands of the rows (:meth:`GroupedConditioning.residuals`);
2. orders the rows along Z (by one column, by value, or along a Morton curve of the
   columns' quantiles) and cuts them into groups of about :data:`GROUP_ROWS` rows of nearly
   equal Z (:func:`groups_along`);
3. maps the residuals to features of their characteristic functions at random frequencies,
   the form in which the distance covariance is defined (Székely et al. 2007, eq. 2.5):
   ``cos(s x)`` and ``sin(s x)`` of each sample's residuals, of its residuals beside their
   group's mean Z (the relation may change with Z), of the sample rebuilt from its
   residuals and its group's mean prediction, and of its residuals times its group's mean Z
   (a slope that changes sign with Z) (:func:`frequency_features`); below
   :data:`DRAW_ROWS` rows, several draws of the frequencies, whose products step 5 sums
   together (one draw of few frequencies misses, at times, a relation that only some meet);
4. removes each feature's mean within each group: what is left of a smooth function of Z
   (in the residuals, or in their scale) is nearly constant within a group;
5. tests that X's features and Y's have no covariance: with ``G_g`` the sum over group g's
   rows of the products ``u v^T``, ``T = |sum_g G_g|^2 / n``. Given Z, under conditional
   independence the ``G_g`` are independent with mean near 0, so ``T`` tends to
   ``sum_j l_j chi2_1``, ``l`` the eigenvalues of their covariance; its p-value is Imhof's
   (1961) integral (:func:`weighted_chi2_sf`). ``T`` spreads its power over every product;
   the largest product alone, standardised, finds a relation that few products carry (one
   that changes with Z): the p-value is twice the smaller of the two, the largest product's
   by Bonferroni over the products, weighted: :data:`UNIT_SHARE` of its level goes to the
   products of the residuals' ``cos`` and ``sin`` at unit frequency (a linear relation, or
   a relation of spreads, carried whole by these few products).

Time and memory are linear in the rows but for the sorts (doc/design/asymptotic-conditional-test).
"""

import numba
import numpy as np
from scipy import integrate, stats

from .._numerics.workspace import Workspace
from .._runtime.threads import one_thread
from ._conditional import GROUP_ROWS, SmoothBasis

#: rows from which the conditional distance test is asymptotic (design/defaults)
ASYMPTOTIC_ROWS = 10_000
#: the regressions on Z are fitted on one row in ``FIT_SHARE``, at least ``FIT_ROWS`` (the
#: residuals are of every row). The estimation error of a fit on few rows wiggles within the
#: groups, where the groups' means cannot remove it (design/defaults)
FIT_ROWS = 2048
FIT_SHARE = 8
#: from ``WIDE_Z`` columns of Z, one row in ``WIDE_FIT_SHARE``: the fit's error grows with Z's
#: columns, and with it the level (design/causal-discovery)
WIDE_Z = 4
WIDE_FIT_SHARE = 2
#: landmarks of those regressions
FIT_LANDMARKS = 100
#: rows of those on which their bandwidths are compared
SELECT_ROWS = 512
#: random frequencies of each feature set (each gives a cosine and a sine): 18 features of
#: each sample and 324 products a draw (design/asymptotic-conditional-test)
FREQUENCIES = {"residuals": 3, "beside Z": 2, "rebuilt": 2, "times Z": 2}
#: below ``DRAW_ROWS`` rows the frequencies are drawn ``DRAW_ROWS // n`` times (at most
#: ``MOST_DRAWS``), and the products of each draw's features join one sum: at few rows one
#: draw misses a relation that only some frequencies meet, and more draws cost little there
#: (design/asymptotic-conditional-test)
DRAW_ROWS = 6_000
MOST_DRAWS = 6
#: the share of the largest product's level that goes to the products of each sample's
#: residuals at unit frequency (their cosine and sine), read apart from the 324: a relation
#: of spreads (Y's spread growing with |X|) or a linear one, which the random frequencies
#: spread over many products (design/asymptotic-conditional-test)
UNIT_SHARE = 0.5
#: the part of Imhof's integral left out beyond its upper limit, at most
_IMHOF_ERROR = 1e-10
#: turns of the sine up to which that integral is taken over a finite interval; beyond, a
#: Fourier quadrature takes its tail to infinity (design/defaults)
_FINITE_TURNS = 200
#: rows of the samples that the groups' quantiles and the check for a discrete Z read
_SAMPLE_ROWS = 4096
#: p-values below this are reported as Chernoff's bound, an upper bound of the p-value
#: (Imhof's integral loses its accuracy there)
_SMALLEST_P = 1e-8


def _fit_rows(n, columns, random_state):
    """The rows the regressions on a Z of ``n`` rows and ``columns`` columns fit on."""
    share = WIDE_FIT_SHARE if columns >= WIDE_Z else FIT_SHARE
    return np.random.RandomState(random_state).permutation(n)[: max(FIT_ROWS, n // share)]


def groups_along(Z):
    """An order of the rows along ``Z`` and the group of each row in that order: runs of
    ``GROUP_ROWS`` consecutive rows, the last run of a value longer. One column is sorted;
    several follow a Morton (Z-order) curve of their quantiles, which keeps rows that are
    near in every column near in the order. Rows that share a value of a Z that takes few
    values (at most one value per ``GROUP_ROWS`` rows) are grouped only among themselves:
    their groups are exact."""
    n, d = Z.shape
    # equal rows have equal projections on a random direction, unequal rows (almost surely)
    # not: one sort finds the values, and orders a single column. Several columns with no
    # repeated row in a sample are not discrete: they need no such sort.
    projection = Z @ np.random.RandomState(0).standard_normal(d)
    sample = projection[:: max(1, n // _SAMPLE_ROWS)]
    runs = np.zeros(n, dtype=np.int64)
    discrete = False
    if d == 1 or len(np.unique(sample)) < len(sample):
        order = np.argsort(projection, kind="stable")
        new_value = np.r_[True, np.diff(projection[order]) != 0]
        discrete = np.count_nonzero(new_value) <= n // GROUP_ROWS
        if discrete:  # the runs are the values' rows
            runs = np.cumsum(new_value)
    if d > 1 and not discrete:
        order = np.argsort(_morton_code(Z), kind="stable")
    starts = np.flatnonzero(np.r_[True, runs[1:] != runs[:-1]])
    lengths = np.diff(np.r_[starts, n])
    position = np.arange(n) - np.repeat(starts, lengths)
    # the k-th run of GROUP_ROWS rows of a run, the rows left over joining the last one
    full = np.maximum(lengths // GROUP_ROWS, 1)
    within = np.minimum(position // GROUP_ROWS, np.repeat(full, lengths) - 1)
    groups = np.repeat(np.cumsum(full) - full, lengths) + within
    return order, groups


def _morton_code(Z):
    """Each row's place on a Morton curve of the columns' quantiles: the bits of each
    column's quantile level, interleaved from the most significant, about ``log2(n) + 3``
    bits in all."""
    n, d = Z.shape
    bits = max(1, min(63 // d, int(np.ceil((np.log2(n) + 3) / d))))
    # each column cut at its quantiles (estimated on a sample): its rank's top bits
    sample = Z[:: max(1, n // _SAMPLE_ROWS)]
    edges = np.quantile(sample, np.arange(1, 2**bits) / 2**bits, axis=0)
    levels = [
        np.searchsorted(edges[:, j], Z[:, j], side="right").astype(np.uint64) for j in range(d)
    ]
    code = np.zeros(n, dtype=np.uint64)
    one = np.uint64(1)
    for bit in range(bits - 1, -1, -1):
        for level in levels:  # column j's bit goes to place d - 1 - j of the bit's d places
            code <<= one
            code |= (level >> np.uint64(bit)) & one
    return code


def frequency_features(A, n_frequencies, rng):
    """``cos(A s_k)`` and ``sin(A s_k)`` ``(n, 2 n_frequencies)`` at frequencies ``s_k`` drawn
    from the multivariate Cauchy density, each weighted by ``sqrt(1 + 1 / |s_k|^2)``: for one
    column, the distance covariance's weight ``1 / s^2`` over that density, so that the
    features' covariances average to the distance covariance (Székely et al. 2007, eq. 2.5).
    The weights keep the features bounded by ``1 + |A|``, for any number of columns; a low
    frequency's sine is nearly the column itself."""
    frequencies = rng.standard_normal((A.shape[1], n_frequencies))
    frequencies /= np.abs(rng.standard_normal(n_frequencies))  # a normal over |normal|: Cauchy
    weights = np.sqrt(1 + 1 / np.sum(frequencies**2, axis=0))
    phases = (A @ frequencies).astype(np.float32)  # float32's cos and sin are vectorised
    out = np.empty((len(A), 2 * n_frequencies))
    _weighted_into(np.cos(phases), np.sin(phases), weights, out)
    return out


@numba.njit(cache=True)
def _weighted_into(cosines, sines, weights, out):
    """``out[:, :k] = cosines * weights`` and ``out[:, k:] = sines * weights`` in double
    precision (numpy's mixed-type products into a strided ``out`` take longer)."""
    k = len(weights)
    for i in range(len(out)):
        for j in range(k):
            out[i, j] = cosines[i, j] * weights[j]
            out[i, k + j] = sines[i, j] * weights[j]


def grouped_covariance_test(U, V, groups, draws=1, unit=None, workspace=None):
    """The test of step 5 on features ``U`` ``(n, draws p)`` and ``V`` ``(n, draws q)``, whose
    rows are in the order of ``groups`` (consecutive labels), float64 arrays that it centres
    within their groups in place: ``(statistic, p_value, null_mean)``, the p-value the
    smaller of the sum's and the largest product's, doubled. The products are those within
    each draw of the frequencies (feature ``k`` of draw ``d`` in column ``k draws + d``), and
    one sum takes them all. With ``unit``, two more such arrays of one draw whose products are
    read apart: the largest product's p-value is then Bonferroni's weighted over both,
    ``UNIT_SHARE`` of the level to ``unit``'s. The statistic is the squared correlation of the
    features (the cross-covariances' squared Frobenius norms over the products of their
    covariances' norms, as distance correlation normalises distance covariance), within
    groups, in [0, 1]; ``null_mean`` its mean under conditional independence. ``workspace``:
    a :class:`~sklearn_adm._numerics.workspace.Workspace` whose arrays the test reuses (a
    search's tests, one after the other), else new ones."""
    workspace = Workspace() if workspace is None else workspace
    n = len(U)
    sizes = np.bincount(groups)
    starts = np.cumsum(sizes) - sizes
    # each feature less its group's mean, and each group's sum of products u v^T (G_g)
    sums, largest_means = _group_sums(U, V, starts, sizes, draws, workspace, "sums")
    grouped = sums.reshape(draws, len(sizes), U.shape[1] // draws, V.shape[1] // draws)
    norms = np.ones(draws)  # each draw's squared norms of the sums of u u^T and v v^T
    for features, largest_mean, axis in zip((U, V), largest_means, (2, 3), strict=True):
        products = features.T @ features
        # a feature constant within every group (to its rounding) says nothing
        constant = np.diag(products) <= n * (1e-10 * largest_mean) ** 2
        products[constant] = products[:, constant] = 0
        for draw in range(draws):
            grouped[(draw,) + (slice(None),) * (axis - 1) + (constant[draw::draws],)] = 0
            norms[draw] *= np.sum(products[draw::draws, draw::draws] ** 2)
    total = sums.sum(axis=1)
    statistic = total.ravel() @ total.ravel() / n
    spread = np.subtract(sums, total[:, None] / len(sizes), out=sums)
    # the covariance in single precision (half the time): its rounding, about 1e-6 of its
    # norm, is far under its estimation error (about 1 / sqrt(groups) of it). Where the
    # groups are fewer than the products, the groups' Gram matrix has the covariance's
    # trace, norm and non-zero eigenvalues (the limit's weights) in a smaller matrix.
    single = workspace.get("single", spread, dtype=np.float32)
    np.copyto(single, spread)
    if len(sizes) < total.size:
        gram = (single @ single.transpose(0, 2, 1)).sum(axis=0)
    else:
        every = single.transpose(1, 0, 2).reshape(len(sizes), -1)
        gram = every.T @ every
    covariance = gram.astype(np.float64) / n
    null_sum = np.trace(covariance)  # the limit's mean: the sum of its weights
    p_value = moment_bound(statistic, null_sum, np.linalg.norm(covariance))
    if p_value >= _SMALLEST_P:  # else the bound is the p-value, with no eigenvalues
        p_value = weighted_chi2_sf(statistic, np.linalg.eigvalsh(covariance))
    # the largest product alone, each standardised: a relation that few products carry
    p_largest = _largest_product(total, spread)
    if unit is not None:
        unit_sums = _group_sums(*unit, starts, sizes, 1, workspace, "unit sums")[0]
        unit_total = unit_sums.sum(axis=1)
        p_unit = _largest_product(unit_total, unit_sums - unit_total[:, None] / len(sizes))
        p_largest = min(p_largest / (1 - UNIT_SHARE), p_unit / UNIT_SHARE)
    p_value = min(1.0, 2 * min(p_value, p_largest))
    # statistic / n is the cross-covariances' squared norm; each covariance's norm is
    # that of its sum of products over n
    norm = np.sum(np.sqrt(norms)) / n
    if norm == 0:  # a constant sample (or one Z predicts exactly): nothing to relate
        return 0.0, p_value, 0.0
    return statistic / norm, p_value, null_sum / norm


def _group_sums(U, V, starts, sizes, draws, workspace, name):
    """:func:`_group_products` of ``U`` and ``V``: each group's sums of the products within
    each draw ``(draws, groups, p q)``, in ``workspace``'s array ``name``, and the largest
    absolute group mean of each feature of each."""
    p, q = U.shape[1], V.shape[1]
    sums = workspace.get(name, U, (draws, len(sizes), p * q // draws**2))
    largest, room = np.zeros(p + q), np.empty(p + q)
    _group_products(U, V, starts, sizes, sums, largest, room)
    return sums, (largest[:p], largest[p:])


def _largest_product(total, spread):
    """Bonferroni's p-value of the largest of the products' sums ``total`` ``(draws, k)``,
    each over its standard deviation across the groups (``spread``: each group's sums less
    their mean, ``(draws, groups, k)``)."""
    scale = np.sqrt(np.einsum("dij,dij->dj", spread, spread))
    varies = scale > 0
    largest = np.max(np.abs(total[varies]) / scale[varies], initial=0.0)
    return min(1.0, 2 * total.size * stats.norm.sf(largest))


@numba.njit(cache=True)
def _group_products(U, V, starts, sizes, sums, largest, room):
    """In place, ``U`` and ``V`` less their groups' means (the groups: runs of ``sizes``
    rows from ``starts``), and into ``sums`` ``(draws, groups, p q)`` each group's sum of the
    products ``u v^T`` within each draw (feature ``k`` of draw ``d`` in column ``k draws + d``
    of ``U``, and of ``V``), flattened; into ``largest``, zeros on entry, the largest
    absolute group mean of each feature of ``U`` and of ``V``; ``room``, as long, holds a
    group's means, then a row of ``V``'s features of a draw. One pass over the rows, each
    read in order (numpy's batches of small products: design/asymptotic-conditional-test).
    The caller makes the arrays: numba compiles an allocation with the kernel, and
    compiling is most of a first test's time."""
    draws, width = len(sums), U.shape[1]
    p, q = width // draws, V.shape[1] // draws
    v = room[:q]
    for g in range(len(starts)):
        first, stop = starts[g], starts[g] + sizes[g]
        _centre(U, first, stop, room[:width], largest[:width])
        _centre(V, first, stop, room[width:], largest[width:])
        for draw in range(draws):
            total = sums[draw, g]
            for k in range(p * q):
                total[k] = 0.0
            for i in range(first, stop):
                for j in range(q):  # the draw's features of V, side by side
                    v[j] = V[i, j * draws + draw]
                for k in range(p):
                    u = U[i, k * draws + draw]
                    row = total[k * q : (k + 1) * q]
                    for j in range(q):
                        row[j] += u * v[j]


@numba.njit(inline="always")
def _centre(features, first, stop, means, largest):
    """Rows ``first`` to ``stop`` of ``features`` less their mean, in place; ``largest``
    raised to the mean's absolute value."""
    for k in range(len(means)):
        means[k] = 0.0
    for i in range(first, stop):
        row = features[i]
        for k in range(len(means)):
            means[k] += row[k]
    for k in range(len(means)):
        means[k] /= stop - first
        largest[k] = max(largest[k], abs(means[k]))
    for i in range(first, stop):
        row = features[i]
        for k in range(len(means)):
            row[k] -= means[k]


def moment_bound(x, total, root_sum_squares):
    """An upper bound of ``P(sum_j w_j chi2_1 > x)`` for any weights ``w`` of sum ``total``
    and root sum of squares ``s = root_sum_squares``: ``sqrt(1 + r) exp(-r / 2)``, ``r = (x -
    total) / s`` (1 where ``x <= total``). It is Chernoff's bound ``exp(-t x) E exp(t T)``
    with ``log E exp(t T) = sum_k (2 t)^k / (2 k) sum_j w_j^k`` and ``sum_j w_j^k <= s^k`` from
    ``k = 2`` (every weight is at most ``s``), at its best ``t``. It needs no eigenvalues:
    where it is far below any level, the weights need not be found."""
    if x <= total or root_sum_squares == 0:
        return 1.0 if x <= total else 0.0
    r = (x - total) / root_sum_squares
    return float(np.exp(0.5 * (np.log1p(r) - r)))


def weighted_chi2_sf(x, weights):
    """``P(sum_j w_j chi2_1 > x)`` by Imhof's (1961) integral, for non-negative weights;
    below ``_SMALLEST_P``, Chernoff's bound ``min_t exp(-t x) prod (1 - 2 t w_j)^(-1/2)``.
    The integrand decays as ``u^(-1 - r/2)`` for ``r`` weights, and oscillates."""
    weights = weights[weights > 1e-12 * max(weights.max(), 0)]
    if len(weights) == 0:  # no variance: a statistic of 0
        return 1.0
    t = np.linspace(0, 0.499, 100)[:, None] / weights.max()
    bound = np.exp(np.min(-t[:, 0] * x - 0.5 * np.log1p(-2 * t * weights).sum(axis=1)))
    if bound < _SMALLEST_P:
        return float(bound)
    # QUADPACK calls the integrand compiled, not through Python; compiled at the first use,
    # not at the package's import
    from ._imhof_integrand import COSINE, SINE, WHOLE, Integrand

    end = _imhof_end(weights)
    whole = Integrand(x, weights, WHOLE)
    if x * end / (2 * np.pi) <= _FINITE_TURNS:
        # p-values need an absolute accuracy, not a relative one: a relative one near
        # p = 1/2 (an integral near 0) is roundoff
        integral, _ = integrate.quad(
            whole.function, 0, end, epsabs=_IMHOF_ERROR, epsrel=0, limit=500
        )
        return float(np.clip(0.5 + integral / np.pi, 0.0, 1.0))
    # else the envelope decays slowly (few weights, or one far above the rest): up to
    # ``start`` the integrand is smooth; beyond, sin(theta) = sin(phase) cos(x u / 2) -
    # cos(phase) sin(x u / 2), slowly varying amplitudes times a Fourier kernel, which
    # QUADPACK's QAWF takes to infinity
    start = 1 / weights.max()
    integral = integrate.quad(whole.function, 0, start)[0]
    for form, kernel, sign in ((SINE, "cos", 1), (COSINE, "sin", -1)):
        amplitude = Integrand(x, weights, form)
        part = integrate.quad(amplitude.function, start, np.inf, weight=kernel, wvar=x / 2)[0]
        integral += sign * part
    return float(np.clip(0.5 + integral / np.pi, 0.0, 1.0))


def _imhof_end(weights):
    """A ``u`` beyond which the rest of Imhof's integral, over pi, is under ``_IMHOF_ERROR``
    (the least of a grid of ``u``; infinite where none on it is). With ``s_j = (w_j u)^2``,
    ``log(1 + s_j)`` is convex in ``log u``, so beyond ``U`` the envelope falls at least as
    ``(U / u)^(1 + a / 2)``, ``a = sum_j s_j / (1 + s_j)`` at ``U``, and the rest is at most
    ``2 / (pi a rho(U))``: Imhof's (1961, eq. 3.4) bound, but from every weight and tight
    where many are small (at 20,000 rows, about a third of his ``u``)."""
    u = np.logspace(-3, 3, 97)[:, None] / weights.max()
    squares = (weights * u) ** 2
    log_rho = 0.25 * np.log1p(squares).sum(axis=1)
    a = (squares / (1 + squares)).sum(axis=1)
    within = np.log(2 / (np.pi * a)) - log_rho <= np.log(_IMHOF_ERROR)
    return u[np.argmax(within), 0] if within.any() else np.inf


def asymptotic_conditional_test(X, Y, Z, random_state):
    """Steps 1-5 on ``X`` ``(n, p)``, ``Y`` ``(n, q)`` and ``Z`` ``(n, r)``:
    ``(statistic, p_value, null_mean)`` of :func:`grouped_covariance_test`."""
    given = GroupedConditioning(Z, random_state)
    return given.test(*given.prepared(np.hstack([X, Y]), X.shape[1]))


class GroupedConditioning:
    """What steps 1-5 compute from ``Z`` alone, for any number of samples tested given the
    same ``Z``: the order along Z and its groups (step 2); and each column's residuals and
    its sample rebuilt from them (step 1), the same whatever columns they are computed with
    (the regressions choose their bandwidth and penalty per column). On one thread: the
    products are small, and more threads only wait for each other (design/threads)."""

    def __init__(self, Z, random_state):
        self.random_state = random_state
        self.order, self.groups = groups_along(Z)
        self.Z = Z[self.order]
        self._sizes = np.bincount(self.groups)
        self._starts = np.cumsum(self._sizes) - self._sizes
        self.z_of_group = self._of_group(_standardized(self.Z))
        # the rows the regressions fit on, and their SmoothBasis, made at the first
        self._fit = self._basis = None

    @property
    def nbytes(self):
        """Bytes of the arrays kept."""
        arrays = (self.order, self.groups, self.Z, self.z_of_group, self._sizes, self._starts)
        kept = sum(a.nbytes for a in arrays)
        return kept + (self._fit.nbytes + self._basis.nbytes if self._basis else 0)

    def residuals(self, A):
        """``A`` (rows in the order along Z) less its prediction from Z by
        :func:`~sklearn_adm.independence._conditional.smooth_regression`, fitted on
        ``max(FIT_ROWS, n // FIT_SHARE)`` rows drawn at random (``WIDE_FIT_SHARE`` for a wide
        Z), on a basis made at the first call and kept. Under conditional independence the
        residuals of X and of Y stay independent given Z: each is a function of its own
        sample and of Z."""
        if self._basis is None:
            self._fit = _fit_rows(*self.Z.shape, self.random_state)
            self._basis = SmoothBasis(self.Z[self._fit], self.random_state, FIT_LANDMARKS)
        predict = self._basis.regression(A[self._fit], select_rows=SELECT_ROWS)
        residuals = A - predict(self.Z)
        # a column that Z predicts to its rounding (a constant one) has no residual: what is
        # left is rounding, which standardising would blow up
        exact = _centred_and_spread(residuals)[1] <= 1e-10 * np.abs(A).max(axis=0)
        residuals[:, exact] = 0
        return residuals

    def _of_group(self, A):
        """Each row's group's mean of ``A``."""
        return (np.add.reduceat(A, self._starts) / self._sizes[:, None])[self.groups]

    def prepared(self, A, split=None):
        """The columns of ``A`` (rows in the caller's order) as step 3 reads them: their
        residuals and the samples rebuilt from them, standardised, in the order along Z;
        split into the first ``split`` columns and the others where given."""
        with one_thread():
            A = A[self.order]
            residuals = self.residuals(A)
            # Within a group only the residuals vary: beside them, the residuals with the
            # group's mean Z, and each sample rebuilt from its residuals and the group's
            # mean prediction (X = f(Z) + e keeps Z's part and e's at one frequency, as a
            # relation of Y to X does, cos(2 X) = cos(2 f(Z) + 2 e), when it changes with
            # Z). A row's own Z would carry Z's small differences within the group into the
            # features, which the other sample's may share. The residuals times the group's
            # mean Z, against the other sample's residuals, carry a slope that changes sign
            # with Z (Y = sign(Z) X + e), whose covariance over all rows averages out.
            rebuilt = _standardized(self._of_group(A - residuals) + residuals)
            prepared = np.stack([_standardized(residuals), rebuilt])
        return prepared if split is None else (prepared[:, :, :split], prepared[:, :, split:])

    def test(self, x, y, workspace=None):
        """Steps 3-5 on samples :meth:`prepared` ``x`` and ``y``:
        ``(statistic, p_value, null_mean)``; ``workspace`` as in
        :func:`grouped_covariance_test`."""
        workspace = Workspace() if workspace is None else workspace
        rng = np.random.RandomState(self.random_state)
        draws = min(MOST_DRAWS, max(1, DRAW_ROWS // len(self.groups)))
        with one_thread():
            U = self._features(x, draws, rng, workspace, "x's features")
            V = self._features(y, draws, rng, workspace, "y's features")
            unit = tuple(np.hstack([np.cos(own), np.sin(own)]) for own, _ in (x, y))
            return grouped_covariance_test(U, V, self.groups, draws, unit, workspace)

    def _features(self, sample, draws, rng, workspace, kept_as):
        """One sample's four feature sets (step 3), ``draws`` draws of their frequencies:
        ``(n, width draws)``, the draws of each feature together, in ``workspace``'s array
        ``kept_as``."""
        own, rebuilt = sample
        times_z = (own[:, :, None] * self.z_of_group[:, None, :]).reshape(len(own), -1)
        sets = {
            "residuals": own,
            "beside Z": np.hstack([own, self.z_of_group]),
            "rebuilt": rebuilt,
            "times Z": times_z,
        }
        # each set's frequencies for every draw at once, draw by draw within a frequency:
        # feature j of draw k in column j draws + k
        width = 2 * sum(FREQUENCIES.values()) * draws
        features = workspace.get(kept_as, own, (len(own), width))
        start = 0
        for name, count in FREQUENCIES.items():
            stop = start + 2 * count * draws
            features[:, start:stop] = frequency_features(sets[name], count * draws, rng)
            start = stop
        return features


def _standardized(A):
    """Columns less their mean, over their standard deviation (a constant column: zeros);
    ``sklearn.preprocessing.scale``, whose checks for missing values take longer."""
    centred, spread = _centred_and_spread(A)
    centred /= np.where(spread > 0, spread, 1)
    return centred


def _centred_and_spread(A):
    """``A`` ``(n, k)`` less its columns' means, and their standard deviations. The sums
    over rows are products with a vector of ones: numpy's sums down few columns are 30x
    slower than the BLAS's."""
    ones = np.ones(len(A))
    centred = A - ones @ A / len(A)
    return centred, np.sqrt(ones @ centred**2 / len(A))
