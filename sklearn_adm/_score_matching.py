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

#: centres and width of the Gaussian bumps, for columns of unit variance
_BUMP_CENTRES, _BUMP_WIDTH = torch.linspace(-2.4, 2.4, 9), 0.5
#: slopes of the tanh basis functions
_TANH_SLOPES = (1.0, 3.0)
#: ridge on the basis' Gram matrix, relative to its mean diagonal
_RIDGE = 1e-3
#: least curvature of a pair, where both columns look Gaussian and the likelihood is flat
_MIN_CURVATURE = 0.1
#: largest turn, in radians, of one plane in one step
_MAX_ANGLE = 0.1
#: weight of a pair's squared angle from the start, against the likelihood's curvature
#: (measured on Bach & Jordan's densities: 0 moved nearly Gaussian pairs by their noise,
#: 1 kept part of the gain with eight sources)
_START_WEIGHT = 0.5


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


def fitted_scores(S):
    """Each column's score fitted by score matching: ``psi`` at the column's own entries,
    shaped like ``S`` ``(n, d)``, and the mean of its derivative ``E[psi']`` ``(d,)`` (for the
    true score, the Fisher information)."""
    values, slopes = _basis(S)
    n, k = len(S), values.shape[-1]
    gram = torch.einsum("ndk,ndl->dkl", values, values) / n
    ridge = _RIDGE * torch.diagonal(gram, dim1=-2, dim2=-1).mean(dim=-1)
    gram = gram + ridge[:, None, None] * torch.eye(k, dtype=S.dtype, device=S.device)
    mean_slopes = slopes.mean(dim=0)  # (d, k)
    coefficients = torch.linalg.solve(gram, mean_slopes[..., None])[..., 0]  # (d, k)
    return torch.einsum("ndk,dk->nd", values, coefficients), (mean_slopes * coefficients).sum(-1)


def likelihood_rotation(Y, rotation, *, steps):
    """``rotation`` ``(d, d)`` of the white scores ``Y`` ``(n, d)`` turned by ``steps``
    quasi-Newton steps of maximum likelihood under the columns' fitted scores, with a
    penalty ``_START_WEIGHT / 2`` times the squared angles from ``rotation``."""
    Y64, start = Y.double(), rotation.double()
    rotation, n = start, len(Y64)
    for _ in range(steps):
        S = Y64 @ rotation
        score, mean_slope = fitted_scores(S)
        # relative gradient G_ij = E[psi_i(s_i) s_j]; its skew part is 0 at the solution
        G = score.T @ S / n
        # Hessian of the pair (i, j): E[psi_i'] + E[psi_j'] - G_ii - G_jj
        curvature = mean_slope - torch.diagonal(G)
        hessian = (curvature[:, None] + curvature[None]).clamp_min(_MIN_CURVATURE)
        travelled = start.T @ rotation  # the angles from the start, to first order
        travelled = (travelled - travelled.T) / 2
        turn = (G - G.T - _START_WEIGHT * travelled) / (hessian + _START_WEIGHT)
        turn = turn.clamp(-_MAX_ANGLE, _MAX_ANGLE)
        rotation = rotation @ torch.linalg.matrix_exp(turn)
    return rotation.to(Y.dtype)
