"""Internal standardisation: the one place where data is centred and put in unit scale.

The game runs on scaled data so that no step size or loss weight depends on the units of the
input: ``fit(X)`` and ``fit(1000 * X)`` play the same game.
"""

import numpy as np

#: share of the mean variance that per-feature scaling adds to each feature's variance
_VARIANCE_FLOOR = 0.1


def magnitude(X):
    """The largest magnitude in ``X``, or 1 when ``X`` is all zeros: dividing by it brings
    any finite ``X`` to entries of at most 1, whose squares and sums of squares neither
    overflow nor underflow (entries of 1e200 square to infinity, those of 1e-200 to 0)."""
    peak = float(np.max(np.abs(X))) if X.size else 0.0
    return peak if peak > 0 else 1.0


def rescaled(Z):
    """``Z`` with centred columns, divided by one number, the largest magnitude: every
    dependence metric is invariant to that, and any finite input then stays far from
    overflow (squared distances of 1e150-sized entries would be infinite)."""
    Z = Z / magnitude(Z)
    Z = Z - Z.mean(axis=0)
    return Z / magnitude(Z)


def fit_scaling(X, per_feature, rows=None):
    """Return ``(mean, scale)`` that map ``X`` to ``(X - mean) / scale``, fitted on the rows
    ``rows`` of ``X`` (all where None).

    With ``per_feature=False`` the scale is one number, the root mean variance of the features,
    so the geometry (which directions carry most variance) is kept, as PCA needs; the scaled
    data has unit mean variance and a squared error per entry reads as a fraction of variance.
    With ``per_feature=True`` feature ``j`` is divided by
    ``sqrt((var_j + 0.1 * mean_var) / 1.1)``: features of equal variance get unit variance,
    as with plain standardisation, but one that barely varies on these rows is not blown up.
    Plain standardisation turned a digits pixel inked in 1 of 1,797 images into a spike of
    about 40 standard deviations, and held-out rows that inked such pixels dominated the
    held-out error. The floor is relative, so ``X`` and ``1000 * X`` scale alike. Both are
    computed in units of the :func:`magnitude` of ``X``, so that any finite ``X`` gets them
    right; a scale of zero (constant data) is replaced by that magnitude. The rows are read
    ``BLOCK_ROWS`` at a time, in float64 (a float32 ``X`` is never copied whole).
    """
    rows = np.arange(len(X)) if rows is None else rows
    blocks = [rows[part] for part in row_blocks(len(rows))]
    unit = max(magnitude(X[block]) for block in blocks)
    parts = [_mean_and_variance(X[block].astype(np.float64) / unit) for block in blocks]
    mean, variance = parts[0][1:] if len(parts) == 1 else _merged(parts)
    return scaling_from_moments(mean, variance, unit, per_feature)


def _mean_and_variance(X):
    return len(X), X.mean(axis=0), X.var(axis=0)


def _merged(parts):
    """The mean and variance of rows from those ``(count, mean, variance)`` of their parts."""
    n, mean, squares = parts[0][0], parts[0][1], parts[0][2] * parts[0][0]
    for count, part_mean, part_variance in parts[1:]:
        n, mean, squares = merge_moments(n, mean, squares, count, part_mean, part_variance * count)
    return mean, squares / n


def merge_moments(n_a, mean_a, squares_a, n_b, mean_b, squares_b):
    """Count, mean and sums of centred squares (a vector: per column; a matrix: the scatter)
    of two sets of rows from each set's (Chan, Golub and LeVeque's pairwise update)."""
    n = n_a + n_b
    delta = mean_b - mean_a
    spread = np.multiply.outer(delta, delta) if np.ndim(squares_a) == 2 else delta * delta
    return n, mean_a + delta * (n_b / n), squares_a + squares_b + spread * (n_a * n_b / n)


#: rows of ``X`` that a fit reads at a time to scale it (a float64 copy of this many rows is
#: the largest temporary: a float32 ``X`` is never copied whole in float64)
BLOCK_ROWS = 131_072


def row_blocks(n_rows, size=BLOCK_ROWS):
    """Slices of ``size`` rows covering ``n_rows`` rows."""
    return [slice(start, start + size) for start in range(0, max(n_rows, 1), size)]


def scaling_from_moments(mean, variance, unit, per_feature):
    """:func:`fit_scaling` from the rows' mean and variance (ddof=0) in units of their
    magnitude ``unit``, as a pass over a file too large for memory gives them."""
    if not per_feature:
        scale = np.sqrt(variance.mean())
        return mean * unit, (scale if scale > 0 else 1.0) * unit
    floored = (variance + _VARIANCE_FLOOR * variance.mean()) / (1.0 + _VARIANCE_FLOOR)
    scale = np.sqrt(floored)
    return mean * unit, np.where(scale > 0, scale, 1.0) * unit


def principal_axes(covariance):
    """The principal axes of scaled rows of covariance ``covariance`` (a tensor), in float64:
    variances in decreasing order (negative rounding clipped to 0), their directions as
    columns, and the floor below which a variance is rounding. The data are in units of unit
    mean variance (:func:`fit_scaling`), so a fixed floor keeps a whitener finite in float32,
    also for constant data."""
    import torch  # a fit's dependency; the rest of this module is numpy's

    eigenvalues, vectors = torch.linalg.eigh(covariance.double())
    eigenvalues, vectors = eigenvalues.flip(0).clamp_min(0), vectors.flip(1)
    floor = max(float(torch.finfo(torch.float64).eps * eigenvalues[0]), 1e-12)
    return eigenvalues, vectors, floor
