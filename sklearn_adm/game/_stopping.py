"""When the game stops, and what it keeps of each update: the stopping rules, each reading the
held-out evaluations, and the history that ``history_`` is read from.

A stopping rule has ``update(evaluation)``, which records an :class:`Evaluation` and returns
whether the game has converged and the readings the history keeps, and
``keep_starts(keep, n_init)``, called when only the starts ``keep`` play on. A rule whose
``reads_start`` is true also reads the evaluation before the first update (``n_iter == 0``).
An estimator passes the game a tuple of rules; the game stops when one of them says so.
"""

import math
from dataclasses import dataclass

import torch

#: standard deviations above independence's mean at which a held-out estimate is dependence
_NOISE_SIGMAS = 3.0
#: share of tol under which the change over half the window counts as converged
_HALF_WINDOW_SHARE = 1 / 32


@dataclass(frozen=True)
class Evaluation:
    """One held-out evaluation, as the stopping rules read it."""

    #: encoder updates so far (0: before the first)
    n_iter: int
    #: each start's held-out objective, ``(n_init,)``
    objective: torch.Tensor
    #: each start's held-out reconstruction, critic MSE and variance penalty, ``(n_init,)`` each
    terms: tuple
    #: the held-out codes whose change :class:`RepresentationChange` measures
    codes: torch.Tensor
    #: the leading start
    leader: int
    n_init: int
    #: held-out rows, and features of one start (the critic's MSE is their mean)
    n_rows: int
    n_features: int


def within_noise(critic_mse, n_rows, n_features):
    """Whether a held-out critic MSE (the mean over ``n_features`` features, each calibrated
    on the same ``n_rows`` rows that the critic never trained on) is what independence gives.

    For fixed predictors, a feature's fitted shrinkage on independent rows leaves
    ``n_rows * (1 - MSE_j)`` distributed as ``max(0, N(0, 1))^2`` (one scale fitted, clipped
    at 0): mean 1/2, variance 5/4. The sum over features is compared with its mean plus
    ``_NOISE_SIGMAS`` standard deviations.
    """
    excess = n_rows * n_features * (1.0 - float(critic_mse))
    return excess <= n_features / 2 + _NOISE_SIGMAS * math.sqrt(1.25 * n_features)


class RepresentationChange:
    """Converged when the leading start's held-out codes changed by less than ``tol``,
    relative to their variance, over the last ``n_iter_no_change`` updates, or by less than
    ``_HALF_WINDOW_SHARE * tol`` over the last half of them: a game that has stopped moving
    need not wait out the whole window to show it."""

    reads_start = False

    def __init__(self, tol, n_iter_no_change, eval_every):
        self.tol, self.n_iter_no_change, self.eval_every = tol, n_iter_no_change, eval_every
        self.snapshots = []  # (iteration, codes of every start)

    def update(self, evaluation):
        """Record an evaluation; return whether training has converged, and the changes
        over the window and over its last half."""
        n_iter, codes = evaluation.n_iter, evaluation.codes
        leader, n_init = evaluation.leader, evaluation.n_init
        window = self.n_iter_no_change
        change = self._change(n_iter - window, codes, leader, n_init)
        half = self._change(n_iter - window // 2, codes, leader, n_init)
        kept = window // self.eval_every
        self.snapshots = [*self.snapshots[-kept:], (n_iter, codes)]
        converged = change < self.tol or half < _HALF_WINDOW_SHARE * self.tol
        return converged, {"val_change": change, "val_change_half": half}

    def _change(self, since, codes, leader, n_init):
        """Squared change of the leader's codes since iteration ``since``, relative to its
        total variance; infinite while the history is shorter than that."""
        older = [snapshot for iteration, snapshot in self.snapshots if iteration <= since]
        if not older:
            return math.inf
        now = codes.view(len(codes), n_init, -1)[:, leader]
        then = older[-1].view(len(codes), n_init, -1)[:, leader]
        tiny = torch.finfo(codes.dtype).tiny
        spread = (then - then.mean(dim=0)).square().sum().clamp_min(tiny)
        return ((now - then).square().sum() / spread).item()

    def keep_starts(self, keep, n_init):
        self.snapshots = [
            (iteration, codes.view(len(codes), n_init, -1)[:, keep].flatten(start_dim=1))
            for iteration, codes in self.snapshots
        ]


class ObjectivePlateau:
    """Converged when the leading start's held-out objective has not fallen by ``tol`` over
    the last ``n_iter_no_change`` updates."""

    reads_start = False

    def __init__(self, tol, n_iter_no_change):
        self.tol, self.n_iter_no_change = tol, n_iter_no_change
        self.best, self.best_at = math.inf, 0

    def update(self, evaluation):
        """Record an evaluation; return whether training has converged, and the updates since
        the objective last fell by ``tol`` (``val_updates_without_improvement``)."""
        n_iter = evaluation.n_iter
        value = float(evaluation.objective[evaluation.leader])
        if value < self.best - self.tol:
            self.best, self.best_at = value, n_iter
        waited = n_iter - self.best_at
        return waited >= self.n_iter_no_change, {"val_updates_without_improvement": waited}

    def keep_starts(self, keep, n_init):
        """The objective's record is the leader's alone: nothing to cut."""


class IndependenceReached:
    """Converged, before the first update too, when the leading start's held-out critic
    finds no more dependence than independence gives (:func:`within_noise`): a game has
    nothing left to remove (the reading ``independent``)."""

    reads_start = True

    def update(self, evaluation):
        critic_mse = evaluation.terms[1][evaluation.leader]
        independent = within_noise(critic_mse, evaluation.n_rows, evaluation.n_features)
        return independent, {"independent": independent}

    def keep_starts(self, keep, n_init):
        """Nothing recorded: nothing to cut."""
