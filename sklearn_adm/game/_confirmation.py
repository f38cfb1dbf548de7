"""Whether a critic that did not play agrees that the game's result is less dependent than its
start: the confirmation policy."""

import copy

import torch

from ..nn._training import row_errors, train_critic
from ._policy import Decision, Policy

#: training rows, at most, on whose codes the confirming critics train
CONFIRMATION_ROWS = 8192
#: standard errors by which the result's held-out error must exceed the start's
CONFIRMATION_Z = 2.0


class FreshCriticConfirmation(Policy):
    """Keep the game's result only where a critic that did not play finds less dependence on
    the held-out rows in it than in the start.

    A critic that played turns an encoder into one that fools it, which another critic need
    not be fooled by: on sentence embeddings, digits and the paper's example, where no
    rotation makes the components independent, ICA's game made them *more* dependent on
    held-out rows for gradient-boosted trees and for a new critic alike, while its own critic
    read less. The judgement (:meth:`judge`) runs at the first held-out evaluation, and a
    game it does not confirm stops there (on the docstrings and digits, every game so judged
    at update 10 was judged so at its end too); it runs again on the result, and a result
    it does not confirm gives way to the start.

    Parameters
    ----------
    rows : int, default=CONFIRMATION_ROWS
        Training rows, at most, on whose codes the confirming critics train.
    z : float, default=CONFIRMATION_Z
        Standard errors of the paired difference by which the result's held-out error must
        exceed the start's.
    """

    def __init__(self, rows=CONFIRMATION_ROWS, z=CONFIRMATION_Z):
        self.rows, self.z = rows, z
        self.verdict = None  # of the judgement at the first evaluation

    def open(self, game):
        """Keep the critic as it is before it plays: the judges are copies of it."""
        self.untrained_critic = copy.deepcopy(game.critic)

    def decide(self, evaluation):
        """At the first held-out evaluation, judge the game's averaged encoder: a game not
        confirmed stops. On the game's result (``evaluation.encoder``), judge it again where
        the first judgement confirmed it: a result not confirmed gives way to the start."""
        game, (X_train, X_val) = evaluation.game, evaluation.data
        if evaluation.encoder is not None:
            if evaluation.n_iter == 0 or game.diverged:
                return Decision()
            confirmed, readings = self.verdict is not False, {}
            if confirmed:
                start = game.start_encoder()
                confirmed, readings = self.judge(game, evaluation.encoder, start, X_train, X_val)
            return Decision(restore_start=not confirmed, readings=readings)
        if evaluation.n_iter != game.settings.eval_every or evaluation.stop:
            return Decision()
        average = game.finished(copy.deepcopy(game.average.module))
        self.verdict, readings = self.judge(game, average, game.start_encoder(), X_train, X_val)
        return Decision(stop=not self.verdict, readings=readings)

    def judge(self, game, encoder, start, X_train, X_val):
        """Whether a critic that did not play finds less dependence on the held-out rows in
        the leading start of the finished ``encoder`` than in ``start``, the game's start
        finished.

        Two copies of the untrained critic train side by side, on the same minibatches of
        training rows, as many steps as the game's critic did, one on the start's codes and
        one on ``encoder``'s, and each reads its calibrated error on the held-out rows; the
        result is confirmed where its error is the larger by more than ``z`` standard errors
        of the difference, paired by row. Returns the verdict and the readings for the
        history: both errors (``fresh_critic_mse_start``, ``fresh_critic_mse``) and
        ``confirmed``.
        """
        s, leader = game.settings, game.leader
        # one critic of two groups, the start's codes and the result's, side by side: both
        # train on the same minibatches, in one batched step
        critic = copy.deepcopy(self.untrained_critic).keep_groups([leader, leader])
        size = critic.n_features // 2
        columns = slice(leader * size, (leader + 1) * size)
        rows = X_train.draw(self.rows, 1, game.generator)  # all, where fewer
        with torch.no_grad():
            codes, held_out = (
                torch.cat([start.encode(x)[:, columns], encoder.encode(x)[:, columns]], dim=1)
                for x in (rows, X_val)
            )
        train_critic(
            critic,
            codes,
            steps=s.warmup_steps + game.n_iter * s.critic_steps,  # as many as the game's
            batch_size=s.critic_batch_size,
            learning_rate=s.critic_learning_rate,
            generator=game.generator,
        )
        errors = row_errors(critic, held_out).view(len(held_out), 2, size).mean(dim=2)
        # a larger error is less dependence; the two are read on the same rows
        gain = errors[:, 1] - errors[:, 0]
        standard_error = gain.std() / len(gain) ** 0.5
        confirmed = bool(gain.mean() > self.z * standard_error)
        readings = {
            "fresh_critic_mse_start": float(errors[:, 0].mean()),
            "fresh_critic_mse": float(errors[:, 1].mean()),
            "confirmed": confirmed,
        }
        return confirmed, readings


class NoConfirmation(Policy):
    """Keep the game's result as it is."""

    def decide(self, evaluation):
        """Nothing to judge."""
        return Decision()
