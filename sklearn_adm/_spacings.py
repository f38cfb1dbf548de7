"""Rotations of least marginal entropy, by m-spacings: the start of :class:`ICA`.

For white data, the rotation whose columns have the least summed entropy is the one whose
columns are the most independent (their mutual information is that sum minus a constant).
Each column's entropy is Vasicek's (1976) m-spacing estimate, which adapts to any density:
multimodal, skewed or heavy-tailed alike, where FastICA's fixed log-cosh contrast misses
some (Learned-Miller & Fisher 2003, "ICA using spacings estimates of entropy", RADICAL).
The rotation is found one plane at a time (Jacobi sweeps) by searching the plane's angle on
a grid refined around its best point; the data are smoothed by noisy replicates so that the
estimate does not jump from one angle to the next.
"""

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

from ._rotation import polar
from ._threads import follow_load

#: rows a search works on: the data are replicated up to this (or cut to it) for up to
#: ``_FULL_COLUMNS`` columns, with proportionally fewer rows above, so that a sweep's cost
#: grows as d, not d^2
_SEARCH_ROWS, _FULL_COLUMNS = 24_000, 8
#: at most this many noisy replicates of each row (RADICAL's number)
_REPLICATES = 30
#: standard deviation of the smoothing noise, for white data (RADICAL's value)
_NOISE = 0.175
#: angles of the first grid over a quarter turn, then of each refinement around the best
_COARSE, _FINE, _REFINEMENTS = 24, 7, 2


def spacing_entropy(Z, spacing):
    """Vasicek's m-spacing estimate of the entropy of each row of ``Z`` ``(..., n)``:
    ``mean_i log((n + 1) / m (z_(i+m) - z_(i)))`` over the sorted values; ``(...)``."""
    n = Z.shape[-1]
    ordered = _sorted(Z)
    gaps = (ordered[..., spacing:] - ordered[..., :-spacing]).clamp_min(1e-12)
    return gaps.log().mean(dim=-1) + math.log((n + 1) / spacing)


def _sorted(Z):
    """``Z`` sorted along its last axis. On the CPU by numpy, whose vectorised sort took a
    tenth of torch's time on a search's grids (16 planes x 24 angles x 2 columns x 6,000
    rows: 10 against 110 ms), its rows split among the fit's threads (numpy's sort
    releases the GIL; 5.8 ms on two)."""
    if Z.device.type != "cpu":
        return torch.sort(Z, dim=-1).values
    values = Z.detach().contiguous().numpy()
    rows = values.reshape(-1, values.shape[-1])
    threads = min(torch.get_num_threads(), len(rows))
    if threads <= 1:
        return torch.from_numpy(np.sort(values, axis=-1))
    ordered = np.empty_like(rows)

    def sort_part(part):
        ordered[part] = np.sort(rows[part], axis=-1)

    bounds = np.linspace(0, len(rows), threads + 1).astype(int)
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(sort_part, map(slice, bounds[:-1], bounds[1:])))
    return torch.from_numpy(ordered.reshape(values.shape))


def _rounds(d):
    """All pairs of ``d`` columns as ``d - 1`` (or ``d``) rounds of disjoint pairs (the
    circle method of round-robin tournaments), so that a round's planes turn at once."""
    players = list(range(d)) + ([None] if d % 2 else [])
    k = len(players)
    rounds = []
    for _ in range(k - 1):
        pairs = [(players[i], players[k - 1 - i]) for i in range(k // 2)]
        rounds.append([pair for pair in pairs if None not in pair])
        players = [players[0], players[-1], *players[1:-1]]
    return rounds


def _best_angles(first, second, spacing):
    """For each plane, the angle turning its two columns ``(planes, n)`` to the least summed
    entropy: a grid over a quarter turn (the entropy sum repeats every quarter turn), then
    finer grids around the best point."""
    center = torch.zeros(first.shape[0], dtype=first.dtype, device=first.device)
    width, steps = math.pi / 4, torch.linspace(-1, 1, _COARSE + 1)[:-1]
    for _ in range(_REFINEMENTS + 1):
        angles = center[:, None] + width * steps.to(first)  # (planes, K)
        cos, sin = angles.cos()[..., None], angles.sin()[..., None]
        a, b = first[:, None], second[:, None]
        turned = torch.stack([cos * a + sin * b, cos * b - sin * a], dim=-2)  # (planes, K, 2, n)
        entropy = spacing_entropy(turned, spacing).sum(dim=-1)
        follow_load()  # a grid's sort is most of a fit's time on large data
        center = angles.gather(1, entropy.argmin(dim=1, keepdim=True)).squeeze(1)
        width = width * (steps[1] - steps[0]).item()  # the next grid spans one step
        steps = torch.linspace(-1, 1, _FINE)
    return center


def search_rows(n, d):
    """Rows of the smoothing that a search of ``n`` rows of ``d`` columns works on."""
    return min(_SEARCH_ROWS * _FULL_COLUMNS // d, _SEARCH_ROWS, _REPLICATES * n)


def grid_size(n, d):
    """Elements of the grids that a round of the search of ``n`` rows of ``d`` columns
    evaluates at once: ``d // 2`` planes x ``_COARSE`` angles x its rows x 2 columns."""
    return (d // 2) * _COARSE * search_rows(n, d) * 2


def _search(Y, rotation, sweeps):
    """One search: Jacobi sweeps from ``rotation`` on one noisy smoothing of ``Y``."""
    n, d = Y.shape
    rows = search_rows(n, d)
    replicates = max(1, math.ceil(rows / n))
    noise = torch.randn(replicates, n, d, dtype=torch.float32).to(Y.device)
    smoothed = (Y.float() + _NOISE * noise).reshape(-1, d)
    smoothed = smoothed[torch.randperm(len(smoothed))[:rows].to(Y.device)]
    spacing = max(1, round(math.sqrt(len(smoothed))))
    rotation = rotation.float().clone()
    for _ in range(sweeps if d > 2 else 1):  # one plane: the grid search is global
        for pairs in _rounds(d):
            i, j = (torch.tensor(index, device=Y.device) for index in zip(*pairs, strict=True))
            first, second = rotation[:, i], rotation[:, j]
            angles = _best_angles((smoothed @ first).T, (smoothed @ second).T, spacing)
            cos, sin = angles.cos(), angles.sin()
            rotation[:, i] = cos * first + sin * second
            rotation[:, j] = cos * second - sin * first
    return rotation


def entropy_rotation(Y, rotation, *, sweeps):
    """The rotation ``(d, d)`` of the white scores ``Y`` ``(n, d)`` of least summed
    m-spacing entropy of its columns, from ``rotation``, by ``sweeps`` Jacobi sweeps (one
    finds the best angle for two columns) on one noisy smoothing of ``Y``. Uses the global
    torch generator for the noise.

    The smoothing noise moves the best angles a little; :class:`ICA` takes likelihood steps
    after this search, with which one search measured as good as averaging several on
    different noise (Bach & Jordan's densities, mean Amari error: 2.75 from one search
    against 2.73 from four with two sources, 1.91 from one against 1.91 from two with
    four), at a fraction of the cost.
    """
    if Y.shape[1] < 2:  # one column: nothing to turn
        return rotation
    return polar(_search(Y, rotation, sweeps).to(Y.dtype))  # orthonormal to Y's precision
