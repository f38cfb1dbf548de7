"""causal-learn's conditional test interface on :class:`ConditionalIndependence`."""

import hashlib
import json

from causallearn.utils.cit import CIT_Base, register_ci_test

from ._engine import ConditionalIndependence

#: the names under which ``pc``, ``fci`` and ``CIT`` find the tests, and their metrics
NAMES = {"adm_dcor": "dcor", "adm_learned": "adm"}


class CausalLearnTest(CIT_Base):
    """sklearn-adm's conditional test as a causal-learn test (``CIT_Base``).

    Importing this class registers it with causal-learn under two names, for
    ``pc(data, alpha, name)``, ``fci(data, name, alpha)`` and ``CIT(data, name)``:

    - ``"adm_dcor"``: the distance test (``metric="dcor"``);
    - ``"adm_learned"``: the learned test (``metric="adm"``; a critic trained for each
      test: seconds each).

    Parameters
    ----------
    data : ndarray of shape (n_samples, n_variables)
        The data, as causal-learn passes it.
    metric : {"dcor", "dcor_sq", "pearson", "adm"}, default="dcor"
        The statistic (the registered names choose it).
    cache_path : str or None, default=None
        causal-learn's JSON file of p-values, kept between runs.
    **params
        Any other parameter of :class:`ConditionalIndependence` (``n_permutations``,
        ``early_stop``, ``missing``, ``random_state``, ...), given to ``pc`` or ``fci``
        as keyword arguments.

    Examples
    --------
    >>> import numpy as np
    >>> from causallearn.search.ConstraintBased.PC import pc
    >>> from sklearn_adm.causal import CausalLearnTest  # registers "adm_dcor"
    >>> rng = np.random.default_rng(0)
    >>> a = rng.normal(size=1000)
    >>> b = np.sin(2 * a) + 0.3 * rng.normal(size=1000)
    >>> c = b**2 + 0.3 * rng.normal(size=1000)
    >>> data = np.c_[a, b, c]
    >>> [str(edge) for edge in pc(data, 0.01, "adm_dcor", show_progress=False).G.get_graph_edges()]
    ['X1 --- X2', 'X2 --- X3']
    >>> [str(edge) for edge in pc(data, 0.01, "fisherz", show_progress=False).G.get_graph_edges()]
    ['X1 --- X2']
    """

    def __init__(self, data, metric="dcor", cache_path=None, **params):
        super().__init__(data, cache_path=cache_path)
        described = json.dumps({"metric": metric, **params}, sort_keys=True, default=repr)
        self.check_cache_method_consistent(
            f"sklearn_adm_{metric}", hashlib.md5(described.encode()).hexdigest()
        )
        self.tests = ConditionalIndependence(data, metric=metric, **params)

    def __deepcopy__(self, memo):
        """The test itself: causal-learn copies its graphs, the test among their fields, and
        a copy would copy the work kept on the conditioning sets."""
        return self

    def __call__(self, X, Y, condition_set=None):
        """The p-value of the test of variables ``X`` and ``Y`` (positions) given
        ``condition_set``."""
        Xs, Ys, condition_set, key = self.get_formatted_XYZ_and_cachekey(X, Y, condition_set)
        if key not in self.pvalue_cache:
            self.pvalue_cache[key] = self.tests.pvalue(Xs, Ys, condition_set)
        return self.pvalue_cache[key]


def _registered(metric):
    """A subclass of :class:`CausalLearnTest` with ``metric`` fixed, for the registry."""

    class Registered(CausalLearnTest):
        def __init__(self, data, **params):
            super().__init__(data, metric=metric, **params)

    Registered.__name__ = Registered.__qualname__ = f"CausalLearnTest_{metric}"
    return Registered


for _name, _metric in NAMES.items():
    register_ci_test(_name, _registered(_metric))
