"""Whether a critic that did not play agrees that the game's result is less dependent than its
start: the confirmation policy."""

import copy

import torch

from ..nn._training import row_errors, train_critic

#: training rows, at most, on whose codes the confirming critics train
CONFIRMATION_ROWS = 8192
#: standard errors by which the result's held-out error must exceed the start's
CONFIRMATION_Z = 2.0


class FreshCriticConfirmation:
    """Keep the game's result only where a critic that did not play finds less dependence on
    the held-out rows in it than in the start.

    A critic that played turns an encoder into one that fools it, which another critic need
    not be fooled by: on sentence embeddings, digits and the paper's example, where no
    rotation makes the components independent, ICA's game made them *more* dependent on
    held-out rows for gradient-boosted trees and for a new critic alike, while its own critic
    read less. The judgement (:meth:`judge`) runs at the first held-out evaluation, and a
    game it does not confirm stops there (on the docstrings and digits, every game so judged
    at update 10 was judged so at its end too); it runs again on the result (:meth:`finish`).

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

    def after_evaluation(self, game, X_train, X_val):
        """At the first held-out evaluation, judge the game's averaged encoder. Returns the
        decision the game applies: whether to stop (a game not confirmed), and the readings
        for its history."""
        if game.n_iter != game.settings.eval_every or game.converged or game.diverged:
            return False, {}
        average = game.finished(copy.deepcopy(game.average.module))
        self.verdict, readings = self.judge(game, average, game.start_encoder(), X_train, X_val)
        return not self.verdict, readings

    def finish(self, game, encoder, X_train, X_val):
        """``encoder`` (finished), or the start's state loaded into it where it is not
        confirmed; and the readings for the game's history."""
        if game.n_iter == 0 or game.diverged:
            return encoder, {}
        start = game.start_encoder()
        confirmed, readings = self.verdict is not False, {}
        if confirmed:
            confirmed, readings = self.judge(game, encoder, start, X_train, X_val)
        if not confirmed:
            encoder.load_state_dict(start.state_dict())
        return encoder, readings

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


class NoConfirmation:
    """Keep the game's result as it is."""

    def open(self, game):
        """Nothing to keep."""

    def after_evaluation(self, game, X_train, X_val):
        """Nothing to judge: no stop, no readings."""
        return False, {}

    def finish(self, game, encoder, X_train, X_val):
        return encoder, {}
