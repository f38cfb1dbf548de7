"""Internal standardisation: the one place where data is centred and put in unit scale.

The game runs on scaled data so that no step size or loss weight depends on the units of the
input: ``fit(X)`` and ``fit(1000 * X)`` play the same game.
"""

import numpy as np
import torch


def fit_scaling(X, per_feature):
    """Return ``(mean, scale)`` that map ``X`` to ``(X - mean) / scale``.

    With ``per_feature=False`` the scale is one number, the root mean variance of the features,
    so the geometry (which directions carry most variance) is kept, as PCA needs; the scaled
    data has unit mean variance and a squared error per entry reads as a fraction of variance.
    With ``per_feature=True`` every feature gets unit variance. A scale of zero (constant data)
    is replaced by 1.
    """
    mean = X.mean(axis=0)
    variance = X.var(axis=0)
    scale = np.sqrt(variance) if per_feature else np.sqrt(variance.mean())
    scale = np.where(scale > 0, scale, 1.0) if per_feature else (scale if scale > 0 else 1.0)
    return mean, scale


def principal_axes(X):
    """The principal axes of scaled, centred rows ``X`` (a tensor), in float64: variances in
    decreasing order (negative rounding clipped to 0), their directions as columns, and the
    floor below which a variance is rounding. The data are in units of unit mean variance
    (:func:`fit_scaling`), so a fixed floor keeps a whitener finite in float32, also for
    constant data."""
    X = X.double()
    eigenvalues, vectors = torch.linalg.eigh(X.T @ X / len(X))
    eigenvalues, vectors = eigenvalues.flip(0).clamp_min(0), vectors.flip(1)
    floor = max(float(torch.finfo(X.dtype).eps * eigenvalues[0]), 1e-12)
    return eigenvalues, vectors, floor
