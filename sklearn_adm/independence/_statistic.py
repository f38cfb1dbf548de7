"""What :class:`~sklearn_adm.DependenceScorer` asks of each metric's statistic.

A statistic reads float64 arrays that the scorer validated and rescaled
(:func:`~sklearn_adm._data.scaling.rescaled`), a ``numpy.random.RandomState`` and a torch
device, and answers four questions: the dependence of each column on the others, of every
pair of columns, and the permutation tests of the columns and of two samples. The tests
run on the permutation engine (:mod:`._permutation`)."""

import itertools

from ._permutation import p_values, shuffle_columns


class Statistic:
    """The interface; a metric overrides what it supports."""

    #: reads a memory-mapped or Dask array of many rows as it streams, not in memory
    streams = False
    #: given Z, reads the residuals over their scale given Z, and Z itself, beside the
    #: residuals (the learned critic: X's relation to Y may turn with Z)
    reads_z = False
    #: tests given Z from ``asymptotic_rows`` rows by a limit distribution
    #: (:meth:`asymptotic_test`), not by permutations
    asymptotic = False
    #: can be permuted at the cost of a test; None, or why not
    untestable = None

    def per_feature(self, Z, rng, device):
        """Dependence of each column on all the others, ``(d,)`` in [0, 1]."""
        raise NotImplementedError

    def pairwise(self, Z, rng, device):
        """Dependence of every pair of columns, ``(d, d)``, symmetric."""
        raise NotImplementedError

    def per_feature_of_each(self, copies, count, device):
        """:meth:`per_feature` of each of ``count`` arrays of one shape, ``(count, d)``."""
        raise NotImplementedError

    def test_columns(self, Z, n_permutations, rng, device):
        """The test of mutual independence: per column, the statistic, its p-value and the
        permutations' mean, each column shuffled on its own in every permutation."""
        copies = itertools.chain([Z], (shuffle_columns(Z, rng) for _ in range(n_permutations)))
        values = self.per_feature_of_each(copies, n_permutations + 1, device)
        observed, permuted = values[0], values[1:]
        return observed, p_values(observed, permuted), permuted.mean(axis=0)

    def test_samples(self, X, Y, given, n_permutations, rng, device, scaled=None, early_stop=None):
        """The test of two samples, or given Z of their residuals: a
        :class:`~._result.DependenceTestResult`.

        ``given``: None, or the
        :class:`~sklearn_adm.independence._conditional.LocalConditioning` whose groups the
        permutations keep; ``scaled``: the residuals over their scale given Z, for a
        statistic that ``reads_z``; ``early_stop``: see
        :func:`~._permutation.sequential_test` (one statistic) and
        :func:`~._permutation.staged_test` (several)."""
        raise NotImplementedError
