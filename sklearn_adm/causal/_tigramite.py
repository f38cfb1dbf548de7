"""tigramite's conditional test interface on sklearn-adm's shared tests."""

import numpy as np
from tigramite.independence_tests.independence_tests_base import CondIndTest

from ._engine import ASYMPTOTIC_ROWS, CACHE_BYTES, SCREEN_ROWS, SharedTests


class TigramiteTest(CondIndTest):
    """sklearn-adm's conditional test as a tigramite test (``CondIndTest``), for ``PCMCI``.

    The test finds its own p-value, which tigramite reads as its ``"analytic"``
    significance: from ``asymptotic_rows`` rows, the distance test's asymptotic null; below, its
    permutations of Y's rows within groups of nearly equal Z (tigramite's block shuffles of
    X do not keep X's dependence on Z, on which a test of X given Z rests). The work on a
    conditioning set is shared between the tests given it, as in
    :class:`ConditionalIndependence`; serial dependence in a time series is the user's to
    mind, as for any test that takes the rows as exchangeable.

    Parameters
    ----------
    metric : {"dcor", "dcor_sq", "pearson", "adm"}, default="dcor"
        The statistic, as in :class:`~sklearn_adm.DependenceScorer`.
    n_permutations, early_stop, asymptotic_rows, screen_rows, random_state, cache_bytes
        As in :class:`ConditionalIndependence`.
    critic_params, device
        As in :class:`ConditionalIndependence`.
    **kwargs
        tigramite's own options (``mask_type``, ``verbosity``, ...).

    Examples
    --------
    >>> import numpy as np
    >>> from tigramite.data_processing import DataFrame
    >>> from tigramite.pcmci import PCMCI
    >>> from sklearn_adm.causal import TigramiteTest
    >>> rng = np.random.default_rng(0)
    >>> data = rng.normal(size=(600, 3))
    >>> for t in range(1, 600):  # x drives y one step later, through a square
    ...     data[t, 1] += 0.8 * data[t - 1, 0] ** 2
    >>> pcmci = PCMCI(DataFrame(data), cond_ind_test=TigramiteTest(), verbosity=0)
    >>> results = pcmci.run_pcmci(tau_max=1, pc_alpha=0.01)
    >>> bool(results["p_matrix"][0, 1, 1] < 0.01), bool(results["p_matrix"][2, 1, 1] > 0.01)
    (True, True)
    """

    @property
    def measure(self):
        """The statistic's name, as tigramite reports it."""
        return f"sklearn_adm_{self.metric}"

    def __init__(
        self,
        metric="dcor",
        *,
        n_permutations=200,
        early_stop=0.2,
        asymptotic_rows=ASYMPTOTIC_ROWS,
        screen_rows=SCREEN_ROWS,
        random_state=0,
        cache_bytes=CACHE_BYTES,
        critic_params=None,
        device="auto",
        significance="analytic",
        **kwargs,
    ):
        if significance != "analytic":
            raise ValueError(
                "TigramiteTest finds its own p-value (tigramite's 'analytic' significance); "
                f"got significance={significance!r}."
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
        self.metric = metric
        self.two_sided = False
        self.residual_based = False
        self._p_value = None
        super().__init__(significance=significance, **kwargs)

    def get_dependence_measure(self, array, xyz, data_type=None):
        """The statistic of the test of X against Y given Z, the rows of ``array``
        ``(dim, T)`` that ``xyz`` labels 0, 1 and 2; its p-value is kept for
        :meth:`get_analytic_significance`."""
        X, Y, Z = (np.ascontiguousarray(array[xyz == label].T) for label in (0, 1, 2))
        result = self._tests.test(X, Y, Z if Z.shape[1] else None)
        self._p_value = result.pvalue
        return result.statistic

    def get_analytic_significance(self, value, T, dim, xyz):
        """The p-value of the test whose statistic :meth:`get_dependence_measure` gave last."""
        return self._p_value
