"""Synthetic data with known independent factors."""

import numpy as np
from sklearn.utils import check_random_state

__all__ = ["make_nonlinear_mixture", "make_pca_vs_pica"]


def make_pca_vs_pica(n_samples=10_000, *, random_state=None):
    r"""The paper's Example 1: two independent factors, three uncorrelated observations.

    With :math:`v_1, v_2 \sim U(-\sqrt 3, \sqrt 3)` independent (unit variance),
    :math:`x = [5 v_1,\ 3 \cos(2\pi v_1 / \sqrt 3),\ v_2]`. The observations are uncorrelated
    with variances 25, 4.5 and 1, so PCA with two components keeps :math:`x_1, x_2`, which are
    both functions of :math:`v_1`; PICA keeps :math:`x_1, x_3`, one per factor.

    Parameters
    ----------
    n_samples : int, default=10_000
        Number of rows.
    random_state : int, RandomState instance or None, default=None
        Seeds the draw.

    Returns
    -------
    X : ndarray of shape (n_samples, 3)
        The observations.
    factors : ndarray of shape (n_samples, 2)
        The latent factors :math:`v_1, v_2`.

    Examples
    --------
    >>> from sklearn_adm.datasets import make_pca_vs_pica
    >>> X, factors = make_pca_vs_pica(100_000, random_state=0)
    >>> X.var(axis=0).round(1)
    array([25. ,  4.5,  1. ])
    """
    rng = check_random_state(random_state)
    factors = rng.uniform(-np.sqrt(3), np.sqrt(3), size=(n_samples, 2))
    v1, v2 = factors.T
    X = np.column_stack([5 * v1, 3 * np.cos(2 * np.pi * v1 / np.sqrt(3)), v2])
    return X, factors


def make_nonlinear_mixture(n_samples=5_000, *, random_state=None):
    r"""Two independent uniform factors mixed nonlinearly into five features.

    With :math:`s_1, s_2 \sim U(-1, 1)` independent,
    :math:`x = [s_1 + s_2,\ s_1 s_2 + s_1/2,\ \tanh(2 s_1) - s_2/2,\ \sin(2 s_2) + 0.3 s_1,\
    s_1^2 - s_2]`: every feature but the products mixes both factors, so no feature alone is
    a factor.

    Parameters
    ----------
    n_samples : int, default=5_000
        Number of rows.
    random_state : int, RandomState instance or None, default=None
        Seeds the draw.

    Returns
    -------
    X : ndarray of shape (n_samples, 5)
        The observations.
    factors : ndarray of shape (n_samples, 2)
        The factors :math:`s_1, s_2`.

    Examples
    --------
    >>> from sklearn_adm.datasets import make_nonlinear_mixture
    >>> X, factors = make_nonlinear_mixture(100, random_state=0)
    >>> X.shape, factors.shape
    ((100, 5), (100, 2))
    """
    rng = check_random_state(random_state)
    factors = rng.uniform(-1, 1, size=(n_samples, 2))
    s1, s2 = factors.T
    X = np.column_stack(
        [
            s1 + s2,
            s1 * s2 + 0.5 * s1,
            np.tanh(2 * s1) - 0.5 * s2,
            np.sin(2 * s2) + 0.3 * s1,
            s1**2 - s2,
        ]
    )
    return X, factors
