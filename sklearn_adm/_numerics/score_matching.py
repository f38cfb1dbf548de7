"""Quasi-maximum-likelihood turns of a rotation with each column's score fitted by score
matching: the last stage of :class:`ICA`'s start.

Maximum likelihood ICA of white data turns the rotation until ``E[psi_i(s_i) s_j] =
E[psi_j(s_j) s_i]`` for every pair of columns, where ``psi = -(log p)'`` is the score of a
column's density (Pham & Garat 1997). The densities are unknown, so each column's score is
fitted in the span of a few basis functions (the identity, two tanh, Gaussian bumps) by
score matching (Hyvärinen 2005): the coefficients ``E[phi phi^T]^(-1) E[phi']`` give the
least-squares projection of the true score on the basis, with neither a density nor a
bandwidth to estimate. The bumps fit multimodal and skewed sources, the tanh heavy tails and
cusps. Each step refits the scores and takes a Newton step of all pairs at once, with the
Hessian that independence gives (as Picard-O does for a fixed score), regularised towards the
start: where both columns of a pair look Gaussian the likelihood is flat next to its noise,
and the pair stays near its start.
"""

import torch

from .._runtime.threads import follow_load
from .linalg import solve_ex

#: centres and width of the Gaussian bumps, for columns of unit variance
_BUMP_CENTRES, _BUMP_WIDTH = torch.linspace(-2.4, 2.4, 9), 0.5
#: slopes of the tanh basis functions
_TANH_SLOPES = (1.0, 3.0)
#: ridge on the basis' Gram matrix, relative to its mean diagonal
_SCORE_RIDGE = 1e-3
#: least curvature of a pair, where both columns look Gaussian and the likelihood is flat
_MIN_CURVATURE = 0.1
#: largest turn, in radians, of one plane in one step
_MAX_PLANE_TURN = 0.1
#: weight of a pair's squared angle from the start, against the likelihood's curvature
_START_WEIGHT = 0.5
#: rows on which the scores are fitted (13 coefficients per column need few)
_FIT_ROWS = 10_000
#: rows on which a column's Gaussian look is judged
_CHECK_ROWS = 5_000
#: Fisher information above a Gaussian's, times the rows, under which a column looks Gaussian
_GAUSSIAN_EXCESS = 400.0
#: the same after the entropy search turned Gaussian columns to their least Gaussian
_SEARCHED_EXCESS = 600.0


def _basis(S):
    """The basis functions and their derivatives at each entry of ``S`` ``(n, d)``; both
    ``(n, d, k)``."""
    values, slopes = [S], [torch.ones_like(S)]
    for a in _TANH_SLOPES:
        t = torch.tanh(a * S)
        values.append(t)
        slopes.append(a * (1 - t.square()))
    u = (S[..., None] - _BUMP_CENTRES.to(S)) / _BUMP_WIDTH
    bumps = torch.exp(-0.5 * u.square())
    values = torch.cat([torch.stack(values, dim=-1), bumps], dim=-1)
    slopes = torch.cat([torch.stack(slopes, dim=-1), -u / _BUMP_WIDTH * bumps], dim=-1)
    return values, slopes


def score_fit(S):
    """Each column's score fitted by score matching on the rows ``S`` ``(n, d)``: the
    coefficients of the basis ``(d, k)`` and the mean of the score's derivative ``E[psi']``
    ``(d,)`` (for the true score, the Fisher information)."""
    values, slopes = _basis(S)
    n, k = len(S), values.shape[-1]
    gram = torch.einsum("ndk,ndl->dkl", values, values) / n
    ridge = _SCORE_RIDGE * torch.diagonal(gram, dim1=-2, dim2=-1).mean(dim=-1)
    gram = gram + ridge[:, None, None] * torch.eye(k, dtype=S.dtype, device=S.device)
    mean_slopes = slopes.mean(dim=0)  # (d, k)
    coefficients = solve_ex(gram, mean_slopes[..., None])[0][..., 0]  # (d, k)
    return coefficients, (mean_slopes * coefficients).sum(-1)


def score_values(S, coefficients):
    """The fitted scores ``psi`` at the entries of ``S`` ``(n, d)``, one basis function at a
    time: the memory of ``S``, not of the ``(n, d, k)`` basis."""
    psi = coefficients[:, 0] * S
    for index, a in enumerate(_TANH_SLOPES, start=1):
        psi += coefficients[:, index] * torch.tanh(a * S)
    first_bump = 1 + len(_TANH_SLOPES)
    for index, centre in enumerate(_BUMP_CENTRES.tolist(), start=first_bump):
        psi += coefficients[:, index] * torch.exp(-0.5 * ((S - centre) / _BUMP_WIDTH).square())
    return psi


def fisher_information(S):
    """Each white column's fitted Fisher information ``E[psi']`` ``(d,)`` (1 for a Gaussian,
    more for any other density), on the first ``_CHECK_ROWS`` rows of ``S`` at most."""
    return score_fit(S[:_CHECK_ROWS].double())[1]


def gaussian_looking(S, *, searched=False):
    """Whether each column of ``S`` ``(n, d)``, white, looks Gaussian: its fitted Fisher
    information is within the noise of a Gaussian's; ``searched`` for columns that a search
    turned to the least Gaussian, whose noise is larger."""
    excess = _SEARCHED_EXCESS if searched else _GAUSSIAN_EXCESS
    return fisher_information(S) - 1.0 < excess / min(len(S), _CHECK_ROWS)


def likelihood_rotation(Y, rotation, *, steps, movable=None):
    """``rotation`` ``(d, d)`` of the white scores ``Y`` ``(n, d)`` turned by ``steps``
    quasi-Newton steps of maximum likelihood under the columns' fitted scores, with a
    penalty ``_START_WEIGHT / 2`` times the squared angles from ``rotation``. The scores
    are fitted on ``_FIT_ROWS`` rows at most (drawn with the global torch generator); the
    gradient uses every row. ``movable`` ``(d, d)``, boolean, marks the planes that may turn
    (all when None)."""
    Y64, start = Y.double(), rotation.double()
    rotation, n = start, len(Y64)
    fit_rows = torch.randperm(n)[:_FIT_ROWS].to(Y.device) if n > _FIT_ROWS else slice(None)
    for _ in range(steps):
        S = Y64 @ rotation
        coefficients, mean_slope = score_fit(S[fit_rows])
        # the scores of all rows in float32 (half the time of float64), summed in float64
        score = score_values(S.float(), coefficients.float()).double()
        # relative gradient G_ij = E[psi_i(s_i) s_j]; its skew part is 0 at the solution
        G = score.T @ S / n
        # Hessian of the pair (i, j): E[psi_i'] + E[psi_j'] - G_ii - G_jj
        curvature = mean_slope - torch.diagonal(G)
        hessian = (curvature[:, None] + curvature[None]).clamp_min(_MIN_CURVATURE)
        travelled = start.T @ rotation  # the angles from the start, to first order
        travelled = (travelled - travelled.T) / 2
        turn = (G - G.T - _START_WEIGHT * travelled) / (hessian + _START_WEIGHT)
        turn = turn.clamp(-_MAX_PLANE_TURN, _MAX_PLANE_TURN)
        if movable is not None:
            turn = turn * movable.to(turn)
        rotation = rotation @ torch.linalg.matrix_exp(turn)
        follow_load()
    return rotation.to(Y.dtype)
