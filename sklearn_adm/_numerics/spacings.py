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

from .._runtime.threads import follow_load
from .rotation import polar

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
#: values of a grid per thread that evaluates it (a refinement's grids gain nothing)
_GRID_PER_THREAD = 1_000_000


def spacing_entropy(Z, spacing):
    """Vasicek's m-spacing estimate of the entropy of each row of ``Z`` ``(..., n)``, a
    tensor or an array (which is sorted in place): ``mean_i log((n + 1) / m (z_(i+m) -
    z_(i)))`` over the sorted values; ``(...)``."""
    n = Z.shape[-1]
    array = isinstance(Z, np.ndarray)
    if array:
        Z.sort(axis=-1)
    ordered = Z if array else torch.sort(Z, dim=-1).values
    gaps = ordered[..., spacing:] - ordered[..., :-spacing]
    if array:  # in place: a grid's arrays are large
        np.log(np.maximum(gaps, 1e-12, out=gaps), out=gaps)
    else:
        gaps.clamp_min_(1e-12).log_()
    return gaps.mean(-1) + math.log((n + 1) / spacing)


def _grid_entropy(first, second, angles, spacing, pool):
    """The summed entropy of the two columns of each plane, ``first`` and ``second``
    ``(planes, n)``, turned by each of its ``angles`` ``(planes, K)``; ``(planes, K)``.

    On the CPU the grids are numpy arrays, their planes split among the fit's threads
    (``pool``'s) where a grid holds ``_GRID_PER_THREAD`` values a thread: numpy's arithmetic
    and sort release the GIL, so each thread works through its planes alone, where torch
    split every operation among the threads and waited for the last part (about half the
    time at 32 columns)."""
    cos, sin = angles.cos()[..., None], angles.sin()[..., None]  # (planes, K, 1)
    columns = first[:, None], second[:, None]  # (planes, 1, n)
    if first.device.type != "cpu":
        return _turned_entropy(*columns, cos, sin, spacing)
    arrays = [x.contiguous().numpy() for x in (*columns, cos, sin)]
    values = angles.numel() * first.shape[1]
    threads = min(torch.get_num_threads(), len(first), max(1, values // _GRID_PER_THREAD))
    if threads == 1:
        return torch.from_numpy(_turned_entropy(*arrays, spacing))
    parts = np.array_split(np.arange(len(first)), threads)
    entropies = pool.map(
        lambda planes: _turned_entropy(*(x[planes] for x in arrays), spacing), parts
    )
    return torch.from_numpy(np.concatenate(list(entropies)))


def _turned_entropy(a, b, cos, sin, spacing):
    """:func:`spacing_entropy` of ``cos a + sin b`` plus that of ``cos b - sin a``."""
    return spacing_entropy(cos * a + sin * b, spacing) + spacing_entropy(cos * b - sin * a, spacing)


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


def _best_angles(first, second, spacing, pool):
    """For each plane, the angle turning its two columns ``(planes, n)`` to the least summed
    entropy: a grid over a quarter turn (the entropy sum repeats every quarter turn), then
    finer grids around the best point (:func:`_grid_entropy`, on the threads of ``pool``)."""
    center = torch.zeros(first.shape[0], dtype=first.dtype, device=first.device)
    width, steps = math.pi / 4, torch.linspace(-1, 1, _COARSE + 1)[:-1]
    for _ in range(_REFINEMENTS + 1):
        angles = center[:, None] + width * steps.to(first)  # (planes, K)
        entropy = _grid_entropy(first, second, angles, spacing, pool)
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
    with ThreadPoolExecutor(torch.get_num_threads()) as pool:
        for _ in range(sweeps if d > 2 else 1):  # one plane: the grid search is global
            for pairs in _rounds(d):
                i, j = (torch.tensor(index, device=Y.device) for index in zip(*pairs, strict=True))
                first, second = rotation[:, i], rotation[:, j]
                scores = (smoothed @ first).T, (smoothed @ second).T
                angles = _best_angles(*scores, spacing, pool)
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
    after this search, with which one search is as good as averaging several on different
    noise, at a fraction of the cost (design/ica).
    """
    if Y.shape[1] < 2:  # one column: nothing to turn
        return rotation
    return polar(_search(Y, rotation, sweeps).to(Y.dtype))  # orthonormal to Y's precision
