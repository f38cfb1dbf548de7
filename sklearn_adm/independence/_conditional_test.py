"""The conditional test ``DependenceScorer.test(X, Y, Z=Z)`` up to its two-sample test: X's
and Y's residuals given Z and the groups of nearly equal Z that the permutations keep
(:mod:`._conditional`), or, from ``asymptotic_rows`` rows, a statistic's asymptotic test
(:mod:`._grouped_covariance`). What depends on Z alone is computed by a ``shared`` object:
:class:`Afresh` at every test, or a cache for many tests given one Z
(:class:`sklearn_adm.causal.ConditionalIndependence`)."""

import numpy as np

from ._conditional import LocalConditioning, draw_folds
from ._grouped_covariance import GroupedConditioning


class Afresh:
    """What a test given Z computes from Z alone, and the samples' residuals given Z,
    computed afresh at every test (a cache for many tests given one Z overrides these)."""

    #: the arrays the asymptotic test reuses from test to test: none, new ones at every test
    workspace = None

    def local(self, Z, rng):
        """The permutation test's :class:`LocalConditioning`, its folds drawn from ``rng``."""
        return LocalConditioning(Z, *draw_folds(len(Z), rng))

    def residuals(self, given, X, Y):
        """X's and Y's residuals given Z, each as the permutation test reads it."""
        return within(given, given.residuals(np.hstack([X, Y])), X.shape[1])

    def grouped(self, Z, seed):
        """The asymptotic test's :class:`GroupedConditioning`."""
        return GroupedConditioning(Z, seed)

    def prepared(self, given, X, Y):
        """X and Y as the asymptotic test reads them."""
        return given.prepared(np.hstack([X, Y]), X.shape[1])


def residuals_given(X, Y, Z, rng, shared, scaled=False):
    """The conditioning on ``Z`` (its folds drawn from ``rng``), X's and Y's residuals given
    it, as the permutation test reads them, and with ``scaled`` the residuals over their
    scale given Z side by side (for a statistic that reads Z), else None."""
    given = shared.local(Z, rng)
    if not scaled:
        return given, *shared.residuals(given, X, Y), None
    residuals = given.residuals(np.hstack([X, Y]))
    over_scale = np.hstack(within(given, given.locally_scaled(residuals), X.shape[1]))
    return given, *within(given, residuals, X.shape[1]), over_scale


def within(given, residuals, split):
    """The residuals of X (the first ``split`` columns) and of Y, within the groups of
    ``given``: X's less their linear fit on Z, Y's less their mean."""
    return given.as_x(residuals[:, :split]), given.as_y(residuals[:, split:])
