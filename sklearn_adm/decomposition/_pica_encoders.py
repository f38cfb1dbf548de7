"""PICA's autoencoders: ``n_init`` subspaces of the whitened data, each with its rotation
(paper, Sec. 5.1 and App. B). Imported by :class:`~sklearn_adm.PICA` when it fits."""

import torch
from torch import nn

from .._data.scaling import principal_axes
from .._numerics.linalg import solve_ex
from .._numerics.rotation import (
    first_angles,
    negentropy,
    negentropy_rotation,
    negentropy_step,
    orthonormalise,
    polar,
    retract,
)
from ..game._autoencoders import Autoencoders
from ..nn._optim import NormalisedMomentum

#: eigenvalues below this share of the largest are numerical noise: those directions are dropped
_RANK_TOLERANCE = 1e-6
#: rows (whitened) on which the rotation's negentropy contrast is computed
_ROTATION_ROWS = 4096
#: plain fixed-point steps solving the final subspace's rotations from their candidates
_EXPLORE_STEPS = 200
#: the same for each start before the game, which turns it on and finish() solves again
_START_EXPLORE_STEPS = 50
#: rows, at most, of the contrast's rows that each update's rotation step reads (the sample
#: of a streamed array holds every row up to its pool's size)
_GAME_ROTATION_ROWS = 4096
#: ascent steps of each start's rotation before the game (it then takes one per update)
_START_ROTATION_STEPS = 30
#: ascent steps, at most, of the rotation on the final frame
_FINAL_ROTATION_STEPS = 50
#: random rotations tried, next to the game's, on each start's final subspace
_FINAL_RESTARTS = 3


class _SubspaceGradient(torch.autograd.Function):
    """``frame``, the orthonormal value of the parameter ``V``, in the forward pass; in the
    backward pass the gradient ``G`` reaching it goes to ``V`` as ``(I - frame frame^T) G P``:
    the part of it that changes the subspace (turns inside the subspace are the rotation's
    business), times the preconditioner ``P``."""

    @staticmethod
    def forward(ctx, parameter, frame, preconditioner):
        ctx.save_for_backward(frame, preconditioner)
        return frame.clone()

    @staticmethod
    def backward(ctx, grad):
        frame, preconditioner = ctx.saved_tensors
        grad = grad - frame @ (frame.transpose(-1, -2) @ grad)
        return grad @ preconditioner.transpose(-1, -2), None, None


class _SubspaceAutoencoders(Autoencoders):
    """``n_init`` linear autoencoders whose codes are independent directions of a subspace.

    The data are whitened once (``prepare``): ``x~ = Lambda^(-1/2) U^T x`` over the ``K``
    principal directions with non-negligible variance. A start is an orthonormal frame ``V``
    ``(K, d)``, its subspace, and a rotation ``R`` ``(d, d)`` inside it; its codes
    ``z = x~ V R`` are white. The best linear decoder of white codes is the regression of
    ``x`` on them, so the variance a start explains depends on ``V`` alone and is known exactly
    from the eigenvalues, ``sum_kj V_kj^2 lambda_k`` (no minibatch noise). Every basis of
    every subspace is reachable, FastICA's non-orthogonal one included, which tied weights
    (decoder = encoder transposed) cannot express.

    The game moves ``V``: its gradient keeps only the part that changes the subspace, scaled by
    the inverse of the variance each direction of the frame explains (a Newton step for the
    reconstruction, so that a high-variance direction is not given up to buy independence that a
    low-variance one could buy cheaper), and a polar retraction keeps it orthonormal. ``R``
    climbs FastICA's contrast, one ascent step after every update, and ``finish`` solves it
    again on the final subspace (FastICA with restarts). The critic does not turn ``R``: in
    tens of dimensions the lagging critic is fooled by rotations; what it does well is choose
    which directions to keep (design/pica-defaults).
    """

    def __init__(self, rows, n_components, n_init, *, rotate):
        super().__init__()
        eigenvalues, vectors, floor = principal_axes(rows.covariance())
        total = eigenvalues.sum().clamp_min(torch.finfo(eigenvalues.dtype).tiny)
        keep = max(int((eigenvalues > _RANK_TOLERANCE * eigenvalues[0]).sum()), n_components)
        # With as many components as directions of variance there is no subspace to choose:
        # the frame's gradient, the part of it that changes the subspace, is zero, and the
        # critic never turns the rotation. One start, PCA's, is then solved by ``finish``.
        self.fixed = keep == n_components
        self.n_init = n_init = 1 if self.fixed else n_init
        eigenvalues, vectors = eigenvalues[:keep], vectors[:, :keep]
        dtype, device = rows.dtype, rows.device
        self.register_buffer("whitener", (vectors * eigenvalues.clamp_min(floor).rsqrt()).to(dtype))
        self.register_buffer("variance_share", (eigenvalues / total).to(dtype))
        self.pca_share = max(float(self.variance_share[:n_components].sum()), 1e-30)
        starts = self._starts(keep, n_components, n_init, dtype)
        self.frame = nn.Parameter(starts.to(device))
        self.rotation_rows = self.prepare(rows.sample(_ROTATION_ROWS))
        self.rotate = rotate and bool(eigenvalues[0] > floor)  # nothing to rotate in constant data
        rotation = torch.eye(n_components, dtype=dtype, device=device)
        rotation = rotation.repeat(n_init, 1, 1)
        if self.rotate and not self.fixed:  # a random rotation per start, then ascent steps in it
            rotation = negentropy_rotation(
                self.rotation_rows @ self.frame.detach(),
                polar(torch.randn_like(rotation)),
                explore=_START_EXPLORE_STEPS,
                max_iter=_START_ROTATION_STEPS,
            )
        self.register_buffer("rotation", rotation)
        self.restarts = polar(torch.randn(_FINAL_RESTARTS, n_components, n_components, dtype=dtype))
        self.restarts = self.restarts.to(device)
        # the angle each start's rotation last turned by along the contrast's gradient
        self.register_buffer("rotation_angle", first_angles(n_init, dtype, device))
        # whether ``after_update`` left frame and rotation orthonormal (an average is not)
        self.orthonormal = False
        # the frame's preconditioner, computed once per update by ``after_update``
        self.preconditioner = None

    @staticmethod
    def _starts(keep, d, n_init, dtype):
        """Start 0 is PCA's subspace. Start ``r`` keeps PCA's leading directions and replaces
        the last ``ceil(d r / n_init)``: start 1 by the principal directions just below the
        cut (a swap), the others by random ones among the directions just above and below
        it. The game is not convex: on the paper's example a start at PCA's subspace ends in
        a worse optimum (it mixes ``x3`` into ``x1``'s component instead of giving up
        ``x2``), and so, on one seed in 40 at 5,000 rows, did all the random ones."""
        frame = torch.eye(keep, d, dtype=dtype).repeat(n_init, 1, 1)
        for start in range(1, n_init):
            redrawn = -(-d * start // n_init)
            first, last = d - redrawn, min(keep, d + redrawn)
            frame[start, :, first:] = 0.0
            if start == 1 and last - d == redrawn:  # swap for the next principal directions
                frame[start, d:last, first:] = torch.eye(redrawn, dtype=dtype)
            else:
                frame[start, first:last, first:] = polar(
                    torch.randn(last - first, redrawn, dtype=dtype)
                )
        return frame

    def prepare(self, x):
        return x @ self.whitener

    def _preconditioner(self, frame):
        """Inverse of the variance share of the frame's directions (a Newton step for the
        reconstruction), with a small ridge."""
        with torch.no_grad():
            gram = frame.transpose(-1, -2) @ (self.variance_share[:, None] * frame)
            d = gram.shape[-1]
            scale = torch.diagonal(gram, dim1=-2, dim2=-1).mean(dim=-1)[:, None, None]
            scale = scale.clamp_min(torch.finfo(gram.dtype).tiny)  # 0 in constant data
            eye = torch.eye(d, dtype=gram.dtype, device=gram.device)
            return solve_ex(gram / scale + 1e-3 * eye, eye.expand_as(gram))[0]  # the inverse

    def _moving_frame(self):
        """The orthonormal frame, with the preconditioned, subspace-changing gradient."""
        # orthonormal after each update; nearly so in the average
        frame = self.frame.detach() if self.orthonormal else retract(self.frame)
        if not torch.is_grad_enabled():
            return frame
        preconditioner = self.preconditioner if self.orthonormal else None
        if preconditioner is None:
            preconditioner = self._preconditioner(frame)
        return _SubspaceGradient.apply(self.frame, frame, preconditioner)

    def encode(self, x):
        rotation = self.rotation if self.orthonormal else polar(self.rotation)
        weight = self._moving_frame() @ rotation
        return torch.einsum("nk,rkd->nrd", x, weight).flatten(start_dim=1)

    def reconstruction_error(self, x, z):
        """Share of PCA's explained variance given up, ``(n_init,)``: 0 on PCA's subspace."""
        kept = (self._moving_frame().square() * self.variance_share[:, None]).sum(dim=(1, 2))
        return 1.0 - kept / self.pca_share

    def make_optimizer(self, learning_rate, device):
        return NormalisedMomentum(self.parameters(), learning_rate)

    def after_update(self):
        with torch.no_grad():
            self.frame.copy_(orthonormalise(self.frame))
            self.preconditioner = self._preconditioner(self.frame)
            if self.rotate:
                rows = self.rotation_rows[:_GAME_ROTATION_ROWS]
                scores = torch.einsum("nk,rkd->rnd", rows, self.frame)
                rotation, self.rotation_angle = negentropy_step(
                    scores, self.rotation, self.rotation_angle
                )
                self.rotation.copy_(rotation)
        self.orthonormal = True

    def finish(self):
        """FastICA on each start's final subspace: from the game's rotation and from
        ``_FINAL_RESTARTS`` random ones, plain fixed-point steps then ascent steps; each start
        keeps the rotation of highest contrast.

        The game turns each rotation by one ascent step per update, so it stays in the basin
        of its start while the subspace moves, and the contrast has many local maxima, which
        the restarts escape (design/pica-defaults)."""
        if not self.rotate:
            return
        with torch.no_grad():
            frame = polar(self.frame)
            restarts = self.restarts.expand(len(self.rotation), -1, -1, -1)
            candidates = torch.cat([polar(self.rotation)[:, None], restarts], dim=1)
            n_candidates = candidates.shape[1]
            scores = torch.einsum("nk,rkd->rnd", self.rotation_rows, frame)
            scores = scores.repeat_interleave(n_candidates, dim=0)
            rotations = negentropy_rotation(
                scores,
                candidates.flatten(end_dim=1),
                explore=_EXPLORE_STEPS,
                max_iter=_FINAL_ROTATION_STEPS,
            )
            best = negentropy(scores, rotations).view(-1, n_candidates).argmax(dim=1)
            rotations = rotations.view(*candidates.shape)[torch.arange(len(best)), best]
            self.frame.copy_(frame)
            self.rotation.copy_(rotations)

    def stopping_codes(self, x, z):
        """The codes before the rotation, ``x V``: they change only as the subspace does (the
        frame's gradient leaves turns inside it out), and ``finish`` solves the rotation again."""
        return torch.einsum("nk,rkd->nrd", x, retract(self.frame)).flatten(start_dim=1)

    def load_state_dict(self, state_dict, *args, **kwargs):
        self.orthonormal = False  # loaded weights (an average) need not be orthonormal
        return super().load_state_dict(state_dict, *args, **kwargs)

    def keep_starts(self, starts):
        self.frame = nn.Parameter(self.frame.detach()[starts].clone())
        self.rotation = self.rotation[starts].clone()
        self.rotation_angle = self.rotation_angle[starts].clone()
        if self.preconditioner is not None:
            self.preconditioner = self.preconditioner[starts]
        self.n_init = len(starts)

    def unmixing(self, start):
        """The trained encoder of one start on the scaled inputs, ``(n_features, d)``."""
        with torch.no_grad():
            weight = polar(self.frame[start]) @ polar(self.rotation[start])
            return (self.whitener.double() @ weight.double()).numpy()
