"""Orthonormal frames: the polar retraction and the negentropy fixed point that rotates them.

PICA's encoder lives on a Stiefel manifold (orthonormal columns, in whitened coordinates).
The helpers here keep it there and turn a whitened frame into independent directions the way
FastICA does (Hyvärinen 1999, symmetric fixed point with the log-cosh contrast).
"""

import torch


def polar(W):
    """The orthonormal factor of ``W`` (batched over leading axes): ``W (W^T W)^(-1/2)``,
    the closest matrix with orthonormal columns. No gradient flows through it."""
    with torch.no_grad():
        eigenvalues, vectors = torch.linalg.eigh(W.transpose(-1, -2) @ W)
        inverse_root = vectors * eigenvalues.clamp_min(torch.finfo(W.dtype).tiny).rsqrt().unsqueeze(
            -2
        )
        return W @ (inverse_root @ vectors.transpose(-1, -2))


def negentropy_step(Y, R):
    """One symmetric fixed-point update of the rotations ``R`` ``(starts, d, d)`` for the
    whitened scores ``Y`` ``(starts, n, d)``, log-cosh contrast; returns the new rotations.

    ``R <- polar(E[y g(y R)] - R diag E[g'(y R)])`` with ``g = tanh``: the update of FastICA's
    parallel algorithm, written for columns.
    """
    with torch.no_grad():
        G = torch.tanh(Y @ R)
        update = Y.transpose(-1, -2) @ G / Y.shape[-2] - R * (1.0 - G.square()).mean(
            dim=-2, keepdim=True
        )
        new = polar(update)
        # w and -w are the same direction: keep each column's sign, so that R converges
        return new * torch.sign((new * R).sum(dim=-2, keepdim=True) + 1e-30)


def negentropy_rotation(Y, R, *, max_iter=200, tol=1e-6):
    """Iterate :func:`negentropy_step` from ``R`` until every column stops turning."""
    for _ in range(max_iter):
        new = negentropy_step(Y, R)
        turn = (1.0 - (new * R).sum(dim=-2).abs()).max()
        R = new
        if turn < tol:
            break
    return R


class NormalisedMomentum(torch.optim.Optimizer):
    """SGD with momentum, each step divided by the running root-mean-square of the gradient
    of the whole tensor (Adam with one second moment per tensor, not per entry).

    Adam rescales every entry on its own, which turns a frame's gradient in an arbitrary
    direction: a tiny but informative component (such as the variance cost of moving one
    column rather than another) is blown up to the same step as a large one. One scale per
    tensor keeps the direction of the gradient, so the update commutes with rotations.
    """

    def __init__(self, params, lr, betas=(0.9, 0.99), decay_steps=None):
        super().__init__(params, {"lr": lr, "betas": betas, "decay_steps": decay_steps})

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["momentum"] = torch.zeros_like(p)
                    state["power"] = torch.zeros((), dtype=p.dtype, device=p.device)
                state["step"] += 1
                t = state["step"]
                state["momentum"].lerp_(p.grad, 1 - beta1)
                # mean squared norm of a column (the last axis indexes columns)
                state["power"].lerp_(p.grad.square().sum(dim=-2).mean(), 1 - beta2)
                scale = (state["power"] / (1 - beta2**t)).sqrt().clamp_min(1e-12)
                lr = group["lr"]
                if group["decay_steps"]:  # Robbins-Monro: noise-driven steps must shrink
                    lr = lr / (1 + t / group["decay_steps"])
                p.sub_(state["momentum"] / ((1 - beta1**t) * scale), alpha=lr)
