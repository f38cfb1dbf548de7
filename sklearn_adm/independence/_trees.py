"""A judge of dependence from another model family than the critic: gradient-boosted trees
predicting each column, and its square, from the others on held-out rows."""

import numpy as np

from .._runtime.threads import one_thread
from ._statistic import Statistic


class TreesStatistic(Statistic):
    """The trees' judge as the scorer's statistic (``metric="hgb"``): per column, the mean of
    the held-out R^2 of a column and of its square; pairwise, each column of a pair predicted
    from the other."""

    untestable = "each permutation would refit boosted trees"

    def per_feature(self, Z, rng, device):
        return gradient_boosting_dependence(Z, random_state=rng).mean(axis=1)

    def pairwise(self, Z, rng, device):
        d = Z.shape[1]
        result = np.eye(d) * (Z.std(axis=0) > 0)
        for j, k in zip(*np.triu_indices(d, k=1), strict=True):
            pair = gradient_boosting_dependence(Z[:, [j, k]], random_state=rng)
            result[j, k] = result[k, j] = pair.mean()
        return result


def gradient_boosting_dependence(Z, *, validation_fraction=0.3, random_state=None):
    """How well gradient-boosted trees predict each column, and its square, from the others.

    A judge of dependence from another model family than the ADM critic: for every column
    ``j``, scikit-learn's :class:`~sklearn.ensemble.HistGradientBoostingRegressor` is fitted
    on part of the rows to predict ``z_j`` and ``z_j^2`` from all the other columns, and its
    R^2 on the held-out rows, clipped to [0, 1], is read for each target. The square catches
    dependence of the spread (heteroscedasticity) that the conditional mean misses.

    Parameters
    ----------
    Z : array-like of shape (n_samples, n_features)
        At least two columns and enough rows for a held-out part.
    validation_fraction : float, default=0.3
        Share of the rows held out for the R^2.
    random_state : int, RandomState instance or None, default=None
        Seeds the split and the trees.

    Returns
    -------
    ndarray of shape (n_features, 2)
        Held-out R^2 of each column (first) and of its square (second); 0 for a column that
        the others do not predict better than its mean, as for independent columns. A
        constant column gives 0. Cost: ``2 d`` boosted models on ``d - 1`` features.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_adm.metrics import gradient_boosting_dependence
    >>> rng = np.random.default_rng(0)
    >>> x = rng.uniform(-1, 1, size=2000)
    >>> Z = np.c_[x, x**2, rng.uniform(size=2000)]
    >>> gradient_boosting_dependence(Z, random_state=0).round(1)  # x^2 fixes x's square only
    array([[0., 1.],
           [1., 1.],
           [0., 0.]])
    """
    from sklearn.utils import check_random_state

    Z = np.asarray(Z, dtype=np.float64)
    rng = check_random_state(random_state)
    n, d = Z.shape
    held_out = rng.permutation(n)[: max(1, int(round(validation_fraction * n)))]
    train = np.setdiff1d(np.arange(n), held_out)
    seed = int(rng.randint(np.iinfo(np.int32).max))
    result = np.zeros((d, 2))
    for j in range(d):
        others = np.delete(Z, j, axis=1)
        for k, target in enumerate((Z[:, j], Z[:, j] ** 2)):
            spread = target[held_out].var()
            if spread <= 0 or np.ptp(target[train]) == 0:
                continue
            model = _fit_small_trees(others[train], target[train], seed)
            with one_thread("openmp"):
                error = np.mean((target[held_out] - model.predict(others[held_out])) ** 2)
            result[j, k] = np.clip(1.0 - error / spread, 0.0, 1.0)
    return result


def _fit_small_trees(X, y, random_state):
    """scikit-learn's gradient-boosted trees fitted on one OpenMP thread: the models here are
    small, and beside torch's thread pool or another busy process more threads spin-wait."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    model = HistGradientBoostingRegressor(early_stopping=False, random_state=random_state)
    with one_thread("openmp"):
        return model.fit(X, y)
