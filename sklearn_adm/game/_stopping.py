"""When the game stops: the stopping rules, each a :class:`~._policy.Policy` that reads the
held-out evaluations and decides whether the game has converged, with readings for the
history. An estimator passes the game a tuple of rules; the game stops when one of them says
so.
"""

import math

import torch

from ._policy import Decision, Policy

#: standard deviations above independence's mean at which a held-out estimate is dependence
_NOISE_SIGMAS = 3.0
#: share of tol under which the change over half the window counts as converged
_HALF_WINDOW_SHARE = 1 / 32


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


class RepresentationChange(Policy):
    """Converged when the leading start's held-out codes changed by less than ``tol``,
    relative to their variance, over the last ``n_iter_no_change`` updates, or by less than
    ``_HALF_WINDOW_SHARE * tol`` over the last half of them: a game that has stopped moving
    need not wait out the whole window to show it."""

    def __init__(self, tol, n_iter_no_change, eval_every):
        self.tol, self.n_iter_no_change, self.eval_every = tol, n_iter_no_change, eval_every
        self.snapshots = []  # (iteration, codes of every start)

    def decide(self, evaluation):
        """Record an evaluation; stop where training has converged. Readings: the changes
        over the window and over its last half."""
        n_iter, codes = evaluation.n_iter, evaluation.codes
        leader, n_init = evaluation.leader, evaluation.n_init
        window = self.n_iter_no_change
        change = self._change(n_iter - window, codes, leader, n_init)
        half = self._change(n_iter - window // 2, codes, leader, n_init)
        kept = window // self.eval_every
        self.snapshots = [*self.snapshots[-kept:], (n_iter, codes)]
        converged = change < self.tol or half < _HALF_WINDOW_SHARE * self.tol
        return Decision(stop=converged, readings={"val_change": change, "val_change_half": half})

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


class ObjectivePlateau(Policy):
    """Converged when the leading start's held-out objective has not fallen by ``tol`` over
    the last ``n_iter_no_change`` updates."""

    def __init__(self, tol, n_iter_no_change):
        self.tol, self.n_iter_no_change = tol, n_iter_no_change
        self.best, self.best_at = math.inf, 0

    def decide(self, evaluation):
        """Record an evaluation; stop where training has converged. Reading: the updates
        since the objective last fell by ``tol`` (``val_updates_without_improvement``)."""
        n_iter = evaluation.n_iter
        value = float(evaluation.objective[evaluation.leader])
        if value < self.best - self.tol:
            self.best, self.best_at = value, n_iter
        waited = n_iter - self.best_at
        return Decision(
            stop=waited >= self.n_iter_no_change,
            readings={"val_updates_without_improvement": waited},
        )


class IndependenceReached(Policy):
    """Converged, before the first update too, when the leading start's held-out critic
    finds no more dependence than independence gives (:func:`within_noise`): a game has
    nothing left to remove (the reading ``independent``)."""

    reads_start = True

    def decide(self, evaluation):
        critic_mse = evaluation.terms[1][evaluation.leader]
        independent = within_noise(critic_mse, evaluation.n_rows, evaluation.n_features)
        return Decision(stop=independent, readings={"independent": independent})
