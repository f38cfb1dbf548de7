"""What the game needs of an autoencoder: :class:`Autoencoders`, the interface every
estimator's encoders implement."""

import torch
from torch import nn

from ..nn._optim import make_adam
from ..nn._training import variance_hinge


class Autoencoders(nn.Module):
    """What the game needs of an autoencoder: ``n_init`` starts side by side.

    Subclasses set ``n_init`` and implement ``encode(x)``, returning the
    ``(n, n_init * n_components)`` codes of all starts, and ``reconstruction_error(x, z)``,
    each start's error ``(n_init,)``. The hooks below default to doing nothing.
    """

    #: True when the game has nothing to move, so that the estimator only calls ``finish``
    #: (on its single start) and plays no game
    fixed = False

    def prepare(self, x):
        """Map the rows once, before the game, into the coordinates ``encode`` reads."""
        return x

    def selection_penalty(self, z):
        """Added to each start's held-out objective when the starts are ranked, ``(n_init,)``
        (may be infinite); zero where the objective alone decides."""
        return torch.zeros(self.n_init, device=z.device)

    def variance_hinge(self, z):
        """The variance hinge of each code ``(n_init * n_components,)`` given the codes
        ``z`` just encoded: :func:`variance_hinge` on them."""
        return variance_hinge(z)

    def after_update(self):
        """Called after every encoder update (a retraction, a constraint, a second solver)."""

    def make_optimizer(self, learning_rate, device):
        """The encoder's optimizer; Adam unless the geometry asks for another."""
        return make_adam(self.parameters(), learning_rate, device)

    def finish(self):
        """Called once on the averaged encoder that the game returns (a final solve)."""

    def stopping_codes(self, x, z):
        """The codes of the rows ``x`` whose change the stopping rule measures, given their
        representation ``z``: ``z`` itself, unless ``finish`` solves part of it again."""
        return z

    def absorb(self, x):
        """Learn what a stream's new batch ``x`` (prepared) teaches beyond the game's updates
        (``partial_fit`` calls it with every batch after the first)."""

    def start_state(self, recorded):
        """The ``state_dict`` of the start as this encoder knows it now, given the one the game
        recorded before its first update: that one, unless a stream's batches refined the
        start (:meth:`absorb`)."""
        return recorded

    def keep_starts(self, starts):
        """Keep only the starts listed, in place and in that order (``n_init`` becomes their
        number)."""
        raise NotImplementedError(f"{type(self).__name__} cannot narrow its starts.")
