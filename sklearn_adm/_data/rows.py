"""The rows a fit learns from: distinct records, the split into training and held-out rows, and
their scaled copy on the device."""

import numpy as np

from .scaling import row_blocks

#: below this many held-out rows, the held-out estimate is too noisy: all rows serve both roles
MIN_VALIDATION_ROWS = 10


#: continuous data: each column has this share as many distinct values as there are distinct rows
_CONTINUOUS_SHARE = 0.9


def scaled_rows(X, rows, mean, scale, device):
    """``(X[rows] - mean) / scale`` as a float32 tensor on ``device``, computed in float64
    ``BLOCK_ROWS`` rows at a time (a float32 ``X`` is never copied whole in float64)."""
    import torch

    scaled = torch.empty((len(rows), X.shape[1]), dtype=torch.float32, device=device)
    for part in row_blocks(len(rows)):
        block = (X[rows[part]].astype(np.float64) - mean) / scale
        scaled[part] = torch.as_tensor(block, dtype=torch.float32)
    return scaled


def split_rows(n_samples, validation_fraction, rng):
    """Indices of the training rows and of the held-out rows (the same rows if too few)."""
    n_val = int(round(validation_fraction * n_samples))
    if n_val < MIN_VALIDATION_ROWS or n_samples - n_val < 2:
        everything = np.arange(n_samples)
        return everything, everything
    order = rng.permutation(n_samples)
    return np.sort(order[n_val:]), np.sort(order[:n_val])


def distinct_records(X):
    """Indices of the rows the game learns from, in order.

    A continuous distribution does not draw the same row twice, so in continuous data a row
    that repeats exactly is a duplicated record (the same text embedded twice) and counts once,
    at its first occurrence. Where rows repeat because they are frequent (counts, small
    integers, categories), the repeats are the distribution and every row counts. The data are
    taken as continuous when the copies are fewer than the distinct rows and every column
    takes nearly as many distinct values as there are distinct rows.
    """
    n_samples = len(X)
    row_bytes = np.dtype((np.void, X.dtype.itemsize * X.shape[1]))
    _, first = np.unique(np.ascontiguousarray(X).view(row_bytes)[:, 0], return_index=True)
    if len(first) == n_samples or 2 * len(first) <= n_samples:
        return np.arange(n_samples)
    first = np.sort(first)
    column_values = 1 + (np.diff(np.sort(X[first], axis=0), axis=0) != 0).sum(axis=0)
    if column_values.min() < _CONTINUOUS_SHARE * len(first):
        return np.arange(n_samples)
    return first
