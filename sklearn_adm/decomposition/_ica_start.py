"""ICA's start and its encoders: FastICA's rotation refined for densities its contrast
misses, and ``n_init`` copies of it turned by the game. Imported by
:class:`~sklearn_adm.ICA` when it fits."""

import torch
from torch import nn

from .._numerics.rotation import polar, retract
from .._numerics.score_matching import gaussian_looking, likelihood_rotation
from .._numerics.spacings import entropy_rotation, search_rows
from ..game._autoencoders import Autoencoders

#: Jacobi sweeps of the entropy search (more than two columns)
_START_SWEEPS = 2
#: quasi-Newton steps of maximum likelihood under fitted scores, after the entropy search
_LIKELIHOOD_STEPS = 5


def refined_start(white, rotation):
    """FastICA's rotation ``(d, d)`` of the white rows ``white`` ``(n, d)``, refined for
    densities that its fixed contrast misses.

    First, where the entropy search sees every row (its smoothed replicates cover the data,
    :func:`~sklearn_adm._numerics.spacings.search_rows`), the rotation is turned, one plane at a
    time, to the least summed m-spacing entropy of the columns
    (:mod:`sklearn_adm._numerics.spacings`): a contrast that adapts to the sources' densities
    (multimodal, skewed) and, with two columns, a global search. On more rows than it sees, its
    estimate is noisier than the start (design/ica) and it is skipped. Then a few Newton steps
    of maximum likelihood under each column's score fitted by score matching
    (:mod:`sklearn_adm._numerics.score_matching`) turn all planes at once, except those whose
    two columns both look Gaussian after the search: there is no density to adapt to, and the
    estimates' noise alone would turn them (design/ica). Where every column looks Gaussian,
    FastICA's rotation is returned as it was. The columns are judged after the search, not
    before: FastICA's wrong solutions of a skewed bimodal density ((q), four sources) are
    mixtures that all look Gaussian, and the search finds the sources.
    """
    n, d = white.shape
    searched, search = rotation, d > 1 and n <= search_rows(n, d)
    if search:
        searched = entropy_rotation(white, rotation, sweeps=_START_SWEEPS)
    non_gaussian = ~gaussian_looking(white @ searched, searched=search)
    if not non_gaussian.any():  # no density to adapt to: the search only followed noise
        return rotation
    # a plane of two Gaussian-looking columns has no direction to prefer: it stays
    movable = non_gaussian[:, None] | non_gaussian[None, :]
    return likelihood_rotation(white, searched, steps=_LIKELIHOOD_STEPS, movable=movable)


class _RotationEncoders(Autoencoders):
    """``n_init`` copies of one rotation of the whitened data, side by side.

    The data are whitened once (``prepare``), so every rotation ``R`` gives white codes
    ``z = x~ R`` and loses nothing: the reconstruction is perfect and only the critic moves
    ``R``. A rotation is ``R = base expm(S - S^T)``; the game's optimizer moves the skew
    generator ``S``, which ``after_update`` folds into ``base`` (so ``S`` stays 0 between
    updates and ``R`` orthonormal to rounding). The copies differ in their critics; the
    held-out rows pick the best.
    """

    def __init__(self, whitener, start, n_init):
        super().__init__()
        self.n_init = n_init
        self.register_buffer("whitener", whitener)
        self.register_buffer("base", start.expand(n_init, -1, -1).clone())
        self.register_buffer("start", self.base.clone())
        self.skew = nn.Parameter(torch.zeros_like(self.base))
        # the starts refined on each batch of a stream, summed, and their number
        self.register_buffer("start_sum", start.double().clone())
        self.n_starts = 1

    def prepare(self, x):
        return x @ self.whitener

    def rotations(self):
        return self.base @ torch.linalg.matrix_exp(self.skew - self.skew.transpose(-1, -2))

    def _differentiable_rotations(self):
        """:meth:`rotations` where the game differentiates them, between two updates: ``S``
        is 0 there (``after_update`` folds each step into ``base``), and at 0 ``expm(G)``
        and ``I + G`` have the same value and the same derivative, without the exponential's
        costly backward pass (design/ica)."""
        return self.base + self.base @ (self.skew - self.skew.transpose(-1, -2))

    def encode(self, x):
        rotations = self._differentiable_rotations()
        return torch.einsum("nk,rkd->nrd", x, rotations).flatten(start_dim=1)

    def reconstruction_error(self, x, z):
        """The squared distance of each rotation from its start, per component: nothing is
        lost by rotating white data, and this term keeps a rotation where its start was
        wherever the critic finds no dependence to remove (nearly Gaussian sources)."""
        gap = self._differentiable_rotations() - self.start
        return gap.square().sum(dim=(1, 2)) / (2 * gap.shape[-1])

    def after_update(self):
        with torch.no_grad():  # orthonormal to rounding: Newton-Schulz, no solver, no sync
            self.base.copy_(retract(self.rotations()))
            self.skew.zero_()

    def finish(self):
        """Fold the averaged encoder's generator in; an average of nearby rotations is
        nearly orthonormal, and ``retract`` makes it so."""
        self.after_update()

    def absorb(self, x):
        """The start refined again on a stream's new batch (from the current start, as
        :func:`refined_start` refines FastICA's); the anchor becomes the mean of the
        rotations so refined, projected on the rotations: each batch's estimate is noisy,
        their mean less so."""
        with torch.no_grad():
            refined = refined_start(x.double(), self.start[0].double())
            self.start_sum += refined
            self.n_starts += 1
            mean = polar(self.start_sum / self.n_starts).to(self.start.dtype)
            self.start.copy_(mean.expand_as(self.start))

    def start_state(self, recorded):
        """The recorded start with its rotations at the anchor as a stream refined it."""
        anchor = self.start.detach().clone()
        return {
            **recorded,
            "base": anchor,
            "start": anchor.clone(),
            "start_sum": self.start_sum.detach().clone(),
        }

    def unmixing(self, start):
        """The trained un-mixing of one start on the scaled inputs, ``(n_features, d)``."""
        with torch.no_grad():
            rotation = polar(self.rotations()[start].double())
            return (self.whitener.double() @ rotation).numpy()
