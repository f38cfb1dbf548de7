"""Orthonormal frames: the polar retraction and the negentropy fixed point that rotates them.

PICA's encoder lives on a Stiefel manifold (orthonormal columns, in whitened coordinates).
The helpers here keep it there and turn a whitened frame into independent directions the way
FastICA does (Hyvärinen 1999, symmetric fixed point with the log-cosh contrast), with a
safeguard that makes every update an ascent of the contrast.
"""

import math

import torch

from .._runtime.threads import follow_load
from .functional import softplus_of_minus_twice, tanh_no_grad
from .linalg import solve_ex


def polar(W):
    """The orthonormal factor of ``W`` (batched over leading axes): ``W (W^T W)^(-1/2)``,
    the closest matrix with orthonormal columns. No gradient flows through it. Computed in
    float64: the Gram matrix squares the condition number of ``W``."""
    with torch.no_grad():
        W64 = W.double()
        eigenvalues, vectors = torch.linalg.eigh(W64.transpose(-1, -2) @ W64)
        inverse_root = vectors * eigenvalues.clamp_min(1e-300).rsqrt().unsqueeze(-2)
        return (W64 @ (inverse_root @ vectors.transpose(-1, -2))).to(W.dtype)


def retract(W, steps=3):
    """The orthonormal factor of a *nearly* orthonormal ``W`` (a frame after a small step,
    an average of nearby frames) by Newton-Schulz iterations, ``W <- W (3 I - W^T W) / 2``:
    matrix products alone, which a GPU runs without the solver's round trips. The error
    ``|I - W^T W|`` squares with each step; :func:`polar` is for any ``W``."""
    with torch.no_grad():
        eye = torch.eye(W.shape[-1], dtype=W.dtype, device=W.device)
        for _ in range(steps):
            W = W @ (1.5 * eye - 0.5 * (W.transpose(-1, -2) @ W))
        return W


#: largest |W^T W - I| from which retract()'s three steps reach the polar factor to rounding
_NEARLY_ORTHONORMAL = 0.05


def orthonormalise(W):
    """:func:`polar` of ``W``, by :func:`retract` where ``W`` is nearly orthonormal (a frame
    after a small step): a few matrix products instead of an eigendecomposition."""
    with torch.no_grad():
        eye = torch.eye(W.shape[-1], dtype=W.dtype, device=W.device)
        if float((W.transpose(-1, -2) @ W - eye).abs().amax()) <= _NEARLY_ORTHONORMAL:
            return retract(W)
        return polar(W)


def _cayley(A):
    """The rotation ``(I - A/2)^(-1) (I + A/2)`` of a skew matrix ``A``: orthogonal exactly,
    close to ``expm(A)`` for small ``A``, and one linear solve per matrix."""
    eye = torch.eye(A.shape[-1], dtype=A.dtype, device=A.device)
    return solve_ex(eye - 0.5 * A, eye + 0.5 * A)[0]


#: E[log cosh(nu)] for a standard normal nu: the contrast's value for a Gaussian direction
_GAUSSIAN_LOG_COSH = 0.3745672075
#: largest angle, in radians, by which the contrast's gradient turns the rotation in one step
_MAX_STEP_ANGLE = 0.5
#: halvings of the angle tried before a start keeps its rotation for this step
_HALVINGS = 10
#: a fixed-point step that turns no column by more than this (``1 - |cos|``) is settled
_SETTLED = 1e-6


def _gaps(U):
    """Per column of the scores ``U``: ``E[log cosh(u_j)] - E[log cosh(nu)]``, with
    ``log cosh(u) = |u| + log(1 + exp(-2|u|)) - log 2`` (no overflow)."""
    a = U.abs()
    log_cosh = softplus_of_minus_twice(a).mean(dim=-2) + a.mean(dim=-2) - math.log(2.0)
    return log_cosh - _GAUSSIAN_LOG_COSH


def negentropy(Y, R):
    """FastICA's contrast for the columns of ``Y R``: ``sum_j |E[log cosh(y r_j)] -
    E[log cosh(nu)]|``, one value per start ``(starts,)``.

    FastICA's symmetric fixed points are the stationary points of this sum, every component
    weighted alike. The sum of squares (Hyvärinen's negentropy approximation) weights the most
    non-Gaussian components most, and its maxima leave more dependence for gradient-boosted
    trees (design/ica).
    """
    return _contrast(_gaps(Y @ R))


def _contrast(gaps):
    """:func:`negentropy` from the columns' :func:`_gaps`."""
    return gaps.abs().sum(dim=-1)


def _fixed_point(Y, U, R):
    """FastICA's symmetric fixed point (Hyvärinen 1999) from ``R``, with ``U = Y R``, written
    for columns: ``R <- polar(E[y g(y R)] - R diag E[g'(y R)])`` with ``g = tanh``."""
    G = tanh_no_grad(U)
    update = Y.transpose(-1, -2) @ G / Y.shape[-2] - R * (
        1.0 - G.square().mean(dim=-2, keepdim=True)
    )
    new = polar(update)
    # w and -w are the same direction: keep each column's sign, so that R converges
    return new * torch.sign((new * R).sum(dim=-2, keepdim=True) + 1e-30)


def _ascent_direction(Y, U, gaps, R):
    """The gradient of :func:`negentropy` on the rotations at ``R`` (``U = Y R``, ``gaps`` its
    :func:`_gaps`), as a skew matrix ``Omega``: ``R cayley(t Omega)`` moves along it."""
    euclidean = Y.transpose(-1, -2) @ tanh_no_grad(U) / Y.shape[-2] * gaps.sign().unsqueeze(-2)
    A = R.transpose(-1, -2) @ euclidean
    return A - A.transpose(-1, -2)


def negentropy_step(Y, R, angle):
    """One monotone update of the rotations ``R`` ``(starts, d, d)`` for the whitened scores
    ``Y`` ``(starts, n, d)``; returns rotations whose :func:`negentropy` is higher (or ``R``)
    and the angles ``(starts,)`` to start from next time.

    FastICA's fixed point converges fast where the independent directions are well defined,
    and turns the components around for ever where they are not (directions of near-equal
    negentropy, clustered data): a start takes it only when it raises the contrast, and
    otherwise turns along the contrast's gradient, trying twice its last ``angle`` and halving
    it until the contrast rises enough (Armijo's rule). Every update is an ascent, so ``R``
    settles.
    """
    with torch.no_grad():
        U = Y @ R
        gaps = _gaps(U)
        now = _contrast(gaps)
        proposal = _fixed_point(Y, U, R)
        improved = negentropy(Y, proposal) > now
        new = torch.where(improved[:, None, None], proposal, R)
        # a start whose fixed point maps it onto itself is at a stationary point of the
        # contrast (FastICA's own test): no ascent direction is left to search along
        pending = ~improved & (_turn(proposal, R) >= _SETTLED)
        if not pending.any():
            return new, angle
        omega = _ascent_direction(Y, U, gaps, R)
        norm = omega.flatten(start_dim=1).norm(dim=1).clamp_min(1e-30)
        unit = omega / norm[:, None, None]
        trial = (2.0 * angle).clamp_max(_MAX_STEP_ANGLE)
        for _ in range(_HALVINGS):
            candidate = R @ _cayley(trial[:, None, None] * unit)
            accepted = pending & (negentropy(Y, candidate) > now + 1e-4 * trial * norm)
            new = torch.where(accepted[:, None, None], candidate, new)
            angle = torch.where(accepted, trial, angle)
            pending = pending & ~accepted
            if not pending.any():
                break
            trial = torch.where(pending, trial / 2, trial)
        return new, torch.where(pending, trial, angle)


def first_angles(n_starts, dtype, device):
    """The ``angle`` that :func:`negentropy_step` starts from: the largest it takes."""
    return torch.full((n_starts,), _MAX_STEP_ANGLE, dtype=dtype, device=device)


def negentropy_rotation(Y, R, *, explore=0, max_iter=200, tol=1e-6):
    """Rotations of high contrast from ``R``: ``explore`` plain fixed-point steps, keeping
    each start's best iterate, then :func:`negentropy_step` until every column stops turning
    (or ``max_iter`` steps).

    The contrast has many local maxima. The plain fixed point, not being monotone, leaves the
    poor ones that an ascent settles in: on scikit-learn's digits (16 components), 200 steps of
    it before the ascent raised the contrast reached from random rotations from 0.44-0.48 to
    0.50 for 6 starts of 8, where FastICA's best runs end. The fit's threads follow the load
    after every step (:func:`~sklearn_adm._runtime.threads.follow_load`).
    """
    U = Y @ R
    best, best_value = R, _contrast(_gaps(U))
    for _ in range(explore):
        previous, R = R, _fixed_point(Y, U, R)
        U = Y @ R
        value = _contrast(_gaps(U))
        better = value > best_value
        best = torch.where(better[:, None, None], R, best)
        best_value = torch.where(better, value, best_value)
        follow_load()
        if _turn(R, previous).max() < tol:  # every start at a fixed point: nothing to explore
            break
    R = best
    angle = first_angles(len(R), R.dtype, R.device)
    for _ in range(max_iter):
        new, angle = negentropy_step(Y, R, angle)
        turn = _turn(new, R).max()
        R = new
        follow_load()
        if turn < tol:
            break
    return R


def _turn(new, R):
    """How far the columns of ``new`` turned from those of ``R``, per start: the largest
    ``1 - |cos|`` of a column with its predecessor."""
    return (1.0 - (new * R).sum(dim=-2).abs()).amax(dim=-1)
