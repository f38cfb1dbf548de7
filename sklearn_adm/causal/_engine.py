"""ConditionalIndependence: the conditional tests that causal discovery asks of one data
table, many at the cost of few."""

import hashlib
import threading
import weakref
from collections import OrderedDict
from dataclasses import replace
from numbers import Integral, Real

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions, validate_parameter_constraints

from .._numerics.workspace import Workspace
from ..independence._conditional import LocalConditioning, draw_folds
from ..independence._conditional_test import Afresh
from ..independence._distance_statistic import SURE_P
from ..independence._grouped_covariance import GroupedConditioning
from ..independence._scorer import DependenceScorer
from ._table import Table

#: rows from which a distance test given Z is asymptotic in a search (a lone
#: DependenceScorer.test: from 10,000): it holds its level there, and PC found better graphs
#: with it than with the permutations, in a third of their time (design/causal-discovery).
#: Also the fewest rows ``asymptotic_rows`` may name: below, too few groups of rows estimate
#: the limit (at 256 rows four nulls were rejected in 0.02-0.14 of 100 draws at 0.05)
ASYMPTOTIC_ROWS = 1000
#: rows of the sample on which a search first tests X and Y given Z where it has twice as
#: many: the sample's p-value is the result where it is at most ``SURE_P``, which the test
#: on all rows would reject at any level in use (design/causal-discovery)
SCREEN_ROWS = 5_000
#: bytes of work on conditioning sets kept by default: the groups of a set and the residuals
#: of each variable given it (at 100,000 rows, 1.6 MB a variable)
CACHE_BYTES = 2**28


class ConditionalIndependence:
    """Tests of conditional independence among the variables of one data table, the work
    that depends only on the conditioning set shared between tests.

    Causal discovery (PC, FCI, PCMCI) asks whether ``x`` is independent of ``y`` given ``z``
    for many pairs and many sets ``z``, and asks the same ``z`` for many pairs. Each test is
    :meth:`DependenceScorer.test(X, Y, Z=Z) <sklearn_adm.DependenceScorer.test>` on all the
    rows, but what depends on ``z`` alone (its groups of nearly equal values, the
    regressions of each variable on it, their residuals) is computed once for every pair
    tested given it, and kept within ``cache_bytes``. A null test also stops early
    (``early_stop``), and a test given ``z`` runs first on a sample of ``screen_rows``
    rows: most tests of a causal search are of
    pairs whose p-value is far from any level, which need no fine p-value. The adapters for
    causal-learn, pgmpy and tigramite run on this class.

    Parameters
    ----------
    data : array-like or pandas.DataFrame of shape (n_samples, n_variables)
        The variables, one a column. In a DataFrame, booleans and numbers are read as
        numbers, an ordered category by its codes, and an unordered category or strings as
        one indicator column per category (an unordered category is not a number: every
        two categories are equally far apart). Missing values are NaN (or pandas' missing
        values).
    metric : {"dcor", "dcor_sq", "pearson", "adm"}, default="dcor"
        The test's statistic, as in :class:`~sklearn_adm.DependenceScorer`. ``"adm"`` trains
        a critic for every test (seconds each); its work is not shared.
    n_permutations : int, default=200
        Permutations of a test that draws them (below ``asymptotic_rows`` rows, or a test
        without a conditioning set); the smallest p-value is ``1 / (n_permutations + 1)``.
    early_stop : float or None, default=0.2
        How null tests stop early. A test of one statistic (without ``z``, or the
        ``"pearson"`` metric) stops at the ``h``-th permutation whose statistic reaches the
        observed one, ``h = floor(40 early_stop)`` (8), with the p-value ``h / L`` after
        ``L`` permutations (Besag & Clifford, 1991); at every level below
        ``h / n_permutations`` it decides as the full test. A distance test given ``z``
        stops after its first 39 permutations where their p-value is above this. Without
        ``z``, from ``asymptotic_rows`` rows, the statistic's limit comes first: the test
        stops where the gamma law that approximates it gives a p-value above this, or where
        a valid bound of its tail is at most 1e-5. The p-value stays valid (at most ``alpha``
        with probability at most ``alpha`` under independence, or ``alpha + 1e-5`` where the
        bound stops it, for any ``alpha`` below this); None draws every permutation.
    asymptotic_rows : int, default=1000
        Rows from which a distance test given ``z`` draws no permutations and reads its
        p-value from the asymptotic null (``result.method`` says which); a lone
        :meth:`DependenceScorer.test <sklearn_adm.DependenceScorer.test>` does so from its
        own ``ASYMPTOTIC_ROWS`` (design/defaults). From these rows a test without ``z`` that
        stops early reads its first stage from the statistic's limit. At least the default:
        below, too few groups of rows estimate the limit, and the test loses its level.
        None: never.
    screen_rows : int or None, default=5000
        With at least twice as many rows, a distance test given ``z`` first runs on this
        many rows (if at least ``asymptotic_rows``: the sample's test is asymptotic), drawn
        once for all tests; where its p-value is at most 1e-5 it is the result
        (``result.method`` names the rows), else the test runs on all rows. None: every
        test on all rows.
    missing : {"error", "drop"}, default="error"
        What a missing value in a tested variable does: ``"error"`` raises a ValueError
        naming the variable; ``"drop"`` leaves that row out of that test only (the result's
        ``n_dropped`` says how many).
    random_state : int, RandomState instance or None, default=0
        Seeds every test alike, so that the work on a conditioning set is the same for
        every pair tested given it; None draws one seed for the object.
    cache_bytes : int, default=2**28
        Bytes at most of work on conditioning sets kept (the least recently used goes
        first); 0 keeps none.
    critic_params : dict or None, default=None
        For ``"adm"``: as in :class:`~sklearn_adm.DependenceScorer`.
    device : str, default="auto"
        For ``"adm"``: as in :class:`~sklearn_adm.DependenceScorer`.

    Attributes
    ----------
    variables : list
        The variables' names: the DataFrame's column labels, or positions.
    n_tests_ : int
        Tests run so far.

    See Also
    --------
    sklearn_adm.DependenceScorer.test : One test of X and Y given Z.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_adm.causal import ConditionalIndependence
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=2000)
    >>> x, y = np.sin(2 * z) + 0.3 * rng.normal(size=2000), z**2 + 0.3 * rng.normal(size=2000)
    >>> tests = ConditionalIndependence(np.c_[x, y, z])
    >>> tests.pvalue(0, 1) < 0.01  # x and y depend on each other through z
    True
    >>> tests.pvalue(0, 1, [2]) > 0.05  # and not given z
    True
    """

    def __init__(
        self,
        data,
        *,
        metric="dcor",
        n_permutations=200,
        early_stop=0.2,
        asymptotic_rows=ASYMPTOTIC_ROWS,
        screen_rows=SCREEN_ROWS,
        missing="error",
        random_state=0,
        cache_bytes=CACHE_BYTES,
        critic_params=None,
        device="auto",
    ):
        validate_parameter_constraints(
            {"missing": [StrOptions({"error", "drop"})]},
            {"missing": missing},
            caller_name=type(self).__name__,
        )
        self._tests = SharedTests(
            metric=metric,
            n_permutations=n_permutations,
            early_stop=early_stop,
            asymptotic_rows=asymptotic_rows,
            screen_rows=screen_rows,
            random_state=random_state,
            cache_bytes=cache_bytes,
            critic_params=critic_params,
            device=device,
            caller_name=type(self).__name__,
        )
        self.asymptotic_rows, self.screen_rows = asymptotic_rows, screen_rows
        self.metric, self.n_permutations, self.early_stop = metric, n_permutations, early_stop
        self.missing, self.cache_bytes = missing, cache_bytes
        self.random_state = self._tests.scorer.random_state
        self._table = Table(data)
        self.variables = list(self._table.names)
        self.n_tests_ = 0

    def test(self, x, y, z=()):
        """Test whether ``x`` is independent of ``y`` given ``z``.

        Parameters
        ----------
        x, y : variable or list of variables
            Names of the variables (column labels, or positions of an array); a list tests
            the variables jointly.
        z : list of variables, default=()
            The conditioning set; empty for an unconditional test.

        Returns
        -------
        result : DependenceTestResult
            As :meth:`DependenceScorer.test <sklearn_adm.DependenceScorer.test>` returns;
            ``n_dropped`` counts the rows left out for a missing value.

        Raises
        ------
        ValueError
            For an unknown variable, one in two of ``x``, ``y`` and ``z``, a missing value
            with ``missing="error"``, or fewer than 4 complete rows.
        """
        X, Y, Z, dropped = self._samples(x, y, z)
        self.n_tests_ += 1
        return replace(self._tests.test(X, Y, Z), n_dropped=dropped)

    def pvalue(self, x, y, z=()):
        """The p-value of :meth:`test`."""
        return self.test(x, y, z).pvalue

    def test_pairs(self, pairs, z=()):
        """:meth:`test` of each pair ``(x, y)`` of ``pairs`` given one set ``z``: the work
        on ``z`` is done once for all of them. Returns a list of results."""
        return [self.test(x, y, z) for x, y in pairs]

    def _samples(self, x, y, z):
        """X, Y and Z (None where z is empty) on the rows complete in all three, and the
        number of rows left out."""
        names = [_as_list(x), _as_list(y), _as_list(z)]
        if not names[0] or not names[1]:
            raise ValueError("x and y must each name at least one variable.")
        positions = [[self._table.variable(name) for name in part] for part in names]
        seen = {}
        for part, which in zip(positions, ("x", "y", "z"), strict=True):
            for j in part:
                if j in seen:
                    raise ValueError(
                        f"Variable {self.variables[j]!r} is in both {seen[j]} and {which}."
                    )
                seen[j] = which
        missing = np.zeros(self._table.n_samples, dtype=bool)
        for j in seen:
            gaps = self._table.missing(j)
            if self.missing == "error" and gaps.any():
                raise ValueError(
                    f"Variable {self.variables[j]!r} has {gaps.sum()} missing values; pass "
                    "missing='drop' to leave such rows out test by test."
                )
            missing |= gaps
        dropped = int(missing.sum())
        if self._table.n_samples - dropped < 4:
            raise ValueError(
                f"Only {self._table.n_samples - dropped} rows have every tested variable; 4 needed."
            )
        rows = np.flatnonzero(~missing) if dropped else slice(None)
        X, Y, Z = (
            np.hstack([self._table.block(j)[rows] for j in part]) if part else None
            for part in positions
        )
        return X, Y, Z, dropped


def _as_list(names):
    if isinstance(names, (list, tuple, set, frozenset, range, np.ndarray)):
        return list(names)
    return [names]


class SharedTests:
    """:meth:`DependenceScorer.test` of arrays, the work on each conditioning set kept
    within ``cache_bytes`` (:class:`ConditioningCache`) and the distance tests stopping
    early (``early_stop``). The parameters are :class:`ConditionalIndependence`'s, checked
    here in ``caller_name``'s name."""

    _parameter_constraints: dict = {
        "metric": [StrOptions({"dcor", "dcor_sq", "pearson", "adm"})],
        "n_permutations": [Interval(Integral, 1, None, closed="left")],
        "early_stop": [Interval(Real, 0, 1, closed="right"), None],
        "asymptotic_rows": [Interval(Integral, ASYMPTOTIC_ROWS, None, closed="left"), None],
        "screen_rows": [Interval(Integral, 4, None, closed="left"), None],
        "random_state": ["random_state"],
        "cache_bytes": [Interval(Integral, 0, None, closed="left")],
        "critic_params": [dict, None],
        "device": [str],
    }

    def __init__(self, *, caller_name, **params):
        validate_parameter_constraints(self._parameter_constraints, params, caller_name)
        seed = params["random_state"]
        if not isinstance(seed, Integral):  # one seed for every test: the work is shared
            seed = int(check_random_state(seed).randint(np.iinfo(np.int32).max))
        self.scorer = DependenceScorer(
            params["metric"],
            max_samples=None,
            random_state=seed,
            critic_params=params["critic_params"],
            device=params["device"],
        )
        self.n_permutations, self.early_stop = params["n_permutations"], params["early_stop"]
        self.asymptotic_rows = params["asymptotic_rows"] or np.inf
        self.screen_rows = params["screen_rows"] or np.inf
        # a sample's test is asymptotic (decisive p-values) only for a distance statistic
        self._screens = self.scorer._statistic().asymptotic and (
            self.asymptotic_rows <= self.screen_rows
        )
        self._samples = {}  # the sample's rows for each number of rows
        self.cache = ConditioningCache(params["cache_bytes"])

    def test(self, X, Y, Z=None):
        """The test of ``X`` ``(n, p)`` against ``Y`` ``(n, q)`` given ``Z`` ``(n, r)``
        (None or no columns: unconditional), float64 arrays without missing values; given
        Z, first on ``screen_rows`` of the rows where there are twice as many. A reported
        p-value at most ``alpha`` is then the sample's at most ``SURE_P`` or the test's on
        all rows at most ``alpha``: the level is at most ``alpha + SURE_P``."""
        if Z is not None and Z.shape[1] == 0:
            Z = None
        n = len(X)
        if Z is not None and self._screens and n >= 2 * self.screen_rows:
            rows = self._screen(n)
            first = self._test(X[rows], Y[rows], Z[rows])
            if first.pvalue <= SURE_P:
                return replace(first, method=f"{first.method}, on {len(rows)} of {n} rows")
        return self._test(X, Y, Z)

    def _screen(self, n):
        """The rows, in order, of the sample that tests of ``n`` rows first run on: the same
        for every test, so that the work on a conditioning set is shared."""
        if n not in self._samples:
            rng = np.random.RandomState(self.scorer.random_state)
            self._samples[n] = np.sort(rng.permutation(n)[: self.screen_rows])
        return self._samples[n]

    def _test(self, X, Y, Z):
        return self.scorer._test_samples(
            X,
            Y,
            self.n_permutations,
            Z,
            shared=self.cache,
            early_stop=self.early_stop,
            asymptotic_rows=self.asymptotic_rows,
        )


class ConditioningCache(Afresh):
    """What tests given one ``Z`` share, kept in memory up to ``max_bytes``, the least
    recently used first out: each conditioning's groups, and each sample's residuals given
    it. Keys are digests of the arrays' bytes, so that any table, rows left out or not, is
    keyed by what it holds; a conditioning is also keyed by the draws that made it, and its
    samples' entries by its own key (remembered while the conditioning lives)."""

    def __init__(self, max_bytes):
        self.max_bytes = max_bytes
        self._entries = OrderedDict()
        self._bytes = 0
        self._key_of = weakref.WeakKeyDictionary()  # each conditioning's key
        self._workspaces = {}  # by thread

    @property
    def workspace(self):
        """The asymptotic test's arrays, reused from one test to the next (a set for each
        thread): each fresh array of a megabyte or more would be paged in anew at every
        test (design/causal-discovery)."""
        return self._workspaces.setdefault(threading.get_ident(), Workspace())

    def local(self, Z, rng):
        folds, seed = draw_folds(len(Z), rng)  # the test's draws, whatever is kept
        key = ("local", _digest(Z), _digest(folds), seed)
        return self._conditioning(key, lambda: LocalConditioning(Z, folds, seed))

    def residuals(self, given, X, Y):
        key = self._key_of[given]

        def within(sample, role):
            raw = self._kept((*key, "raw", _digest(sample)), lambda: given.residuals(sample))
            form = given.as_x if role == "x" else given.as_y
            return self._kept((*key, role, _digest(sample)), lambda: form(raw))

        return within(X, "x"), within(Y, "y")

    def grouped(self, Z, seed):
        key = ("grouped", _digest(Z), seed)
        return self._conditioning(key, lambda: GroupedConditioning(Z, seed))

    def prepared(self, given, X, Y):
        key = self._key_of[given]
        return tuple(self._kept((*key, _digest(A)), lambda A=A: given.prepared(A)) for A in (X, Y))

    def _conditioning(self, key, make):
        """The conditioning kept under ``key`` (or ``make()``'s), its key remembered."""
        given = self._kept(key, make)
        self._key_of[given] = key
        return given

    def _kept(self, key, make):
        """The value kept under ``key``, or ``make()``'s, kept. A conditioning grows as
        regressions on it keep their bases: its size is measured again at each use."""
        if key in self._entries:
            self._entries.move_to_end(key)
            value, size = self._entries[key]
        else:
            value, size = make(), 0
        self._bytes -= size
        size = _nbytes(value)
        if size <= self.max_bytes:
            self._entries[key] = (value, size)
            self._bytes += size
        else:
            self._entries.pop(key, None)
        while self._bytes > self.max_bytes:
            _, (_, freed) = self._entries.popitem(last=False)
            self._bytes -= freed
        return value


def _digest(A):
    """A digest of the array ``A``'s shape and bytes."""
    A = np.ascontiguousarray(A)
    digest = hashlib.blake2b(str(A.shape).encode(), digest_size=16)
    digest.update(A.view(np.uint8).reshape(-1))
    return digest.digest()


def _nbytes(value):
    """Bytes of the arrays ``value`` holds (an array or a tuple of them, or an object that
    counts its own)."""
    if isinstance(value, tuple):
        return sum(_nbytes(part) for part in value)
    return value.nbytes
