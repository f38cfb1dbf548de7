"""The ADM training game (Algorithm 1 of the paper), written once for every estimator.

The dependence branch (an :class:`~sklearn_adm.ADMCritic`) takes ``critic_steps`` updates on
detached representations, then the encoder takes one update on

    reconstruction_weight * reconstruction
    + dependence_weight * (1 - mean critic MSE)
    + variance_weight * variance hinge,

the relaxed problem of Eq. (4) with the reconstruction of Eq. (6) as task loss.

Finite data. Algorithm 1 draws fresh samples at every step; an estimator sees the same rows
again and again, and a critic that memorises them reports dependence that is not there. So:

* rows held out from all training (``X_val``) give the estimate of dependence that the history
  reports and that picks the best of the ``n_init`` starts;
* each predictor's output is shrunk by the factor ``alpha_j`` in [0, 1] that fits the held-out
  rows best (a one-parameter calibration per feature): a prediction that only memorised the
  training rows gets ``alpha_j = 0`` and stops driving the encoder.

Several starts play side by side: the encoder holds ``n_init`` independent copies and one
critic scores them all, each predictor seeing only the features of its own start
(``ADMCritic(n_groups=n_init)``). The encoder returned is the exponential moving average of its
iterates, as in GAN training, which settles the jitter that the adversary keeps up.
"""

import copy

import torch
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
from tqdm.auto import tqdm

from .._runtime.threads import follow_load
from .._runtime.warnings import warn
from ..nn._critic_step import dependence_gradient
from ..nn._optim import CriticAdam
from ..nn._training import CriticUpdates, calibrate, row_errors, train_critic
from ._settings import GameResult
from ._stopping import History, ObjectivePlateau, RepresentationChange, within_noise

#: training rows, at most, on whose codes the critics of :meth:`AdversarialGame.confirm` train
_CONFIRMATION_ROWS = 8192
#: standard errors by which the result's held-out error must exceed the start's there
_CONFIRMATION_Z = 2.0


class AdversarialGame:
    """Plays Algorithm 1 between an autoencoder and an :class:`~sklearn_adm.ADMCritic`.

    Parameters
    ----------
    autoencoder : Autoencoders
        ``n_init`` starts side by side. The game's training rows (``X_train``: a
        :class:`~sklearn_adm._data.streaming.TensorRows` or
        :class:`~sklearn_adm._data.streaming.StreamedRows`) and held-out rows (``X_val``, a tensor)
        are already ``prepare``-d.
    critic : ADMCritic
        Its ``n_features`` equals the width of ``z`` and its ``n_groups`` equals ``n_init``.
    settings : GameSettings
    generator : torch.Generator
        Draws the minibatches; seeded by the estimator's ``random_state``.
    """

    def __init__(self, autoencoder, critic, settings, generator):
        self.autoencoder = autoencoder
        self.critic = critic
        self.settings = settings
        self.generator = generator
        device = next(critic.parameters()).device
        self.encoder_optimizer = autoencoder.make_optimizer(settings.learning_rate, device)
        self.average = AveragedModel(
            autoencoder, multi_avg_fn=_MovingAverage(settings.ema_decay), use_buffers=True
        )
        self.alpha = torch.ones(critic.n_features, device=device)
        self.critic_update = self._critic_updates(device)
        # the critic before it has played: the judge of :meth:`confirm`
        self.untrained_critic = (
            copy.deepcopy(critic) if settings.confirm_with_fresh_critic else None
        )

    def _critic_updates(self, device):
        """The critic's steps, with a fresh Adam (a new critic's parameters need one)."""
        optimizer = CriticAdam(self.critic, self.settings.critic_learning_rate, device)
        return CriticUpdates(self.critic, optimizer, device)

    def _loss(self, reconstruction, critic_mse, penalty):
        """The encoder's loss of each start from its three terms, each ``(n_init,)``."""
        s = self.settings
        return (
            s.reconstruction_weight * reconstruction
            + s.dependence_weight * (1.0 - critic_mse)
            + s.variance_weight * penalty
        )

    def _per_start(self, per_feature, n_init):
        """The mean of a per-feature value ``(n_init * d,)`` within each start."""
        return per_feature.view(n_init, -1).mean(dim=1)

    def _objective(self, autoencoder, x):
        """Encoder loss of each start on the held-out rows ``x``, shape ``(n_init,)``, its
        three terms, the critic's calibration on ``x`` and the representation."""
        z = autoencoder.encode(x)
        reconstruction = autoencoder.reconstruction_error(x, z)
        alpha, mse = calibrate(self.critic, z)
        terms = (
            reconstruction,
            self._per_start(mse, autoencoder.n_init),
            self._per_start(autoencoder.variance_hinge(z), autoencoder.n_init),
        )
        return self._loss(*terms), terms, alpha, z

    def _decay_learning_rate(self, n_iter):
        """Robbins-Monro: late steps are driven by the critic's noise and must shrink."""
        if self.settings.learning_rate_decay:
            for group in self.encoder_optimizer.param_groups:
                group["lr"] = self.settings.learning_rate / (
                    1 + n_iter / self.settings.learning_rate_decay
                )

    def _encoder_step(self, X_train):
        """One update of the encoder on a minibatch, against the critic as it stands (its
        predictions shrunk by the last held-out calibration); returns each start's loss and
        its terms. The critic's term reaches the encoder through its gradient with respect to
        the codes, written out (:func:`~sklearn_adm.nn._critic_step.dependence_gradient`)."""
        s, autoencoder = self.settings, self.autoencoder
        n_init = autoencoder.n_init
        batch = X_train.draw(s.batch_size, 1, self.generator)
        z = autoencoder.encode(batch)
        # d/dz of dependence_weight * (1 - each start's mean MSE), summed over the starts
        weight = z.new_full((1,), -s.dependence_weight * n_init / z.shape[1])
        mse, grad_z = dependence_gradient(self.critic, z.detach(), self.alpha, weight)
        reconstruction = autoencoder.reconstruction_error(batch, z)
        penalty = self._per_start(autoencoder.variance_hinge(z), n_init)
        terms = (reconstruction, self._per_start(mse, n_init), penalty)
        # Restarts share no parameters: the gradient of the sum trains each on its own loss.
        loss = self._loss(*terms)  # the critic's MSE is a constant here: its term's gradient
        surrogate = loss.sum() + (z * grad_z).sum()  # reaches z through grad_z
        params = [p for p in autoencoder.parameters() if p.requires_grad]
        grads = torch.autograd.grad(surrogate, params)
        for p, g in zip(params, grads, strict=True):
            p.grad = g
        self.encoder_optimizer.step()
        autoencoder.after_update()
        self.average.update_parameters(autoencoder)
        return loss.detach(), [term.detach() for term in terms]

    @torch.no_grad()
    def _evaluate(self, X_val):
        """Held-out objective of each start, its terms, the codes whose change the stopping
        rule measures, and the criterion that ranks the starts: the objective plus the
        autoencoder's ``selection_penalty``."""
        average = self.average.module
        loss, terms, self.alpha, z = self._objective(average, X_val)
        criterion = loss  # one start alone needs no ranking
        if average.n_init > 1:
            criterion = loss + average.selection_penalty(z[: self.settings.selection_rows])
        return loss, terms, average.stopping_codes(X_val, z), criterion

    def _narrow(self, keep, history, stopping, criteria):
        """Let the starts ``keep`` alone play on, in that order: cut the autoencoder, its
        average, the critic, their optimizers' states, the history and the stopping rule's
        records down to them, so that they play on as they would have with the others.
        Returns the cut ``criteria``."""
        n_init, rows = self.autoencoder.n_init, self.critic.group_features(keep)
        encoder_state = self.encoder_optimizer.state_dict()
        critic_state = self.critic_update.optimizer.state_dict()
        self.autoencoder.keep_starts(keep)
        self.average.module.keep_starts(keep)
        self.critic.keep_groups(keep)
        self.alpha = self.alpha[rows]
        device = self.alpha.device
        self.encoder_optimizer = self.autoencoder.make_optimizer(
            self.settings.learning_rate, device
        )
        self.encoder_optimizer.load_state_dict(_cut_state(encoder_state, lambda length: keep))
        self.critic_update = self._critic_updates(device)
        # a critic's parameter is indexed by group, or by feature (the rows of the groups)
        self.critic_update.optimizer.load_state_dict(
            _cut_state(critic_state, lambda length: keep if length == n_init else rows)
        )
        history.keep_starts(keep)
        stopping.keep_starts(keep, n_init)
        return [criterion[keep] for criterion in criteria]

    def _train_critic(self, X_train, steps):
        """``steps`` critic updates against the encoder as it stands; the codes of ``critic_steps``
        minibatches at a time are computed in one pass. The fit's threads follow the load after each
        such round (:func:`~sklearn_adm._runtime.threads.follow_load`)."""
        chunk, size = self.settings.critic_steps, self.settings.critic_batch_size
        for done in range(0, steps, chunk):
            count = min(chunk, steps - done)
            with torch.no_grad():
                z = self.autoencoder.encode(X_train.draw(size, count, self.generator))
            batches = z.chunk(count) if len(z) == count * size else [z] * count
            for batch in batches:
                self.critic_update(batch)
            follow_load()

    def play(self, X_train, X_val, desc="ADM"):
        """Run the game; leave ``autoencoder`` holding the averaged encoder's weights.

        The critic warms up (:meth:`open`), then updates follow (:meth:`step`) until the
        stopping rule says the game has converged or ``max_iter`` is reached; with
        ``stop_when_independent`` the held-out critic's test may stop it before the first
        update. Returns a :class:`GameResult` whose ``best_init`` names the leading start and
        whose history describes it; the estimator reports a game that diverged or ran to
        ``max_iter`` (:func:`~sklearn_adm.decomposition._base.warn_game_outcome`).
        """
        s = self.settings
        self.open(X_train, X_val, desc)
        progress = tqdm(total=s.max_iter, desc=desc, disable=s.verbose < 1, leave=False)
        try:
            while not self.converged and self.n_iter < s.max_iter:
                if not self.step(X_train, X_val):
                    break
                progress.update()
                if s.confirm_with_fresh_critic and self.n_iter == s.eval_every:
                    self._judge_early(X_train, X_val)
                if self.val_terms is not None and self.n_iter % s.eval_every == 0:
                    progress.set_postfix(
                        reconstruction=f"{self.val_terms[0][self.leader].item():.4f}",
                        critic_mse=f"{self.val_terms[1][self.leader].item():.3f}",
                    )
        except KeyboardInterrupt:
            self.average.module.load_state_dict(self.last_good)
            warn(
                f"{desc}: training interrupted at iteration {self.n_iter}; keeping the model of "
                "the last evaluation.",
                UserWarning,
            )
            self.converged = True  # the user chose to stop; no convergence warning on top
        finally:
            progress.close()
        self.autoencoder.load_state_dict(self.average.module.state_dict())
        self.autoencoder.finish()
        if s.confirm_with_fresh_critic and self.n_iter > 0 and not self.diverged:
            self.confirm(X_train, X_val)
        history = self.history.entries(self.leader)
        return GameResult(history, self.n_iter, self.converged, self.leader, self.diverged)

    def open(self, X_train, X_val, desc="ADM"):
        """Warm the critic up on the starts as they are; with ``stop_when_independent``,
        end the game before its first update where the held-out critic finds no dependence."""
        s = self.settings
        self.history, self.stopping = History(), self._stopping_rule()
        self.n_iter, self.leader, self.criteria, self.val_terms = 0, 0, [], None
        self.converged, self.diverged = False, False
        self.verdict = None  # of :meth:`_judge_early`
        self._train_critic(X_train, s.warmup_steps)
        if s.stop_when_independent:
            objective, val_terms, _, criterion = self._evaluate(X_val)
            self.leader = int(criterion.argmin())
            if self._within_noise(val_terms[1][self.leader], X_val):
                self.history.evaluation(0, objective, val_terms, independent=True)
                if s.verbose:
                    tqdm.write(f"{desc}: the held-out critic finds no dependence left; no update.")
                self.converged = True
        self.last_good = self.start = copy.deepcopy(self.average.module.state_dict())

    def confirm(self, X_train, X_val):
        """Keep the leading start's encoder only where a critic that did not play finds
        less dependence in it than in the start (:meth:`_judge`); else return the start."""
        start = self._start_encoder()
        confirmed = self.verdict is not False and self._judge(
            self.autoencoder, start, X_train, X_val
        )
        if not confirmed:
            self.autoencoder.load_state_dict(start.state_dict())

    def _judge_early(self, X_train, X_val):
        """At the first held-out evaluation, :meth:`_judge` the averaged encoder: a game
        whose result a critic that did not play does not find less dependent than the
        start stops there (on the docstrings and digits, every game so judged at update
        10 was judged so at its end too)."""
        if self.converged or self.diverged:
            return
        average = copy.deepcopy(self.average.module)
        average.finish()
        self.verdict = self._judge(average, self._start_encoder(), X_train, X_val)
        self.converged = not self.verdict

    def _start_encoder(self):
        """The encoder as the game found it, finished."""
        start = copy.deepcopy(self.autoencoder)
        start.load_state_dict(self.start)
        start.finish()
        return start

    def _judge(self, encoder, start, X_train, X_val):
        """Whether a critic that did not play finds less dependence on the held-out rows
        in the leading start of the finished ``encoder`` than in ``start``
        (:meth:`_start_encoder`).

        A critic that played turns an encoder into one that fools it, which another critic
        need not be fooled by: on sentence embeddings, digits and the paper's example, where
        no rotation makes the components independent, ICA's game made them *more*
        dependent on held-out rows for gradient-boosted trees and for a new critic alike,
        while its own critic read less. Two copies of the untrained critic train side by
        side, on the same minibatches of training rows, as many steps as the game's critic
        did, one on the start's codes and one on ``encoder``'s, and each reads its
        calibrated error on the held-out rows; the result is confirmed where its error is
        the larger by more than ``_CONFIRMATION_Z`` standard errors of the difference,
        paired by row. The history's last entry records both errors
        (``fresh_critic_mse_start``, ``fresh_critic_mse``) and ``confirmed``.
        """
        s, leader = self.settings, self.leader
        # one critic of two groups, the start's codes and the result's, side by side: both
        # train on the same minibatches, in one batched step
        critic = copy.deepcopy(self.untrained_critic).keep_groups([leader, leader])
        size = critic.n_features // 2
        columns = slice(leader * size, (leader + 1) * size)
        rows = X_train.draw(_CONFIRMATION_ROWS, 1, self.generator)  # all, where fewer
        with torch.no_grad():
            codes, held_out = (
                torch.cat([start.encode(x)[:, columns], encoder.encode(x)[:, columns]], dim=1)
                for x in (rows, X_val)
            )
        train_critic(
            critic,
            codes,
            steps=s.warmup_steps + self.n_iter * s.critic_steps,  # as many as the game's
            batch_size=s.critic_batch_size,
            learning_rate=s.critic_learning_rate,
            generator=self.generator,
        )
        errors = row_errors(critic, held_out).view(len(held_out), 2, size).mean(dim=2)
        # a larger error is less dependence; the two are read on the same rows
        gain = errors[:, 1] - errors[:, 0]
        standard_error = gain.std() / len(gain) ** 0.5
        confirmed = bool(gain.mean() > _CONFIRMATION_Z * standard_error)
        self.history.note(
            fresh_critic_mse_start=float(errors[:, 0].mean()),
            fresh_critic_mse=float(errors[:, 1].mean()),
            confirmed=confirmed,
        )
        return confirmed

    def step(self, X_train, X_val):
        """One update (Algorithm 1's), and every ``eval_every`` updates the held-out evaluation
        (:meth:`_evaluation`), which ranks the starts and feeds the stopping rule
        (:meth:`_stopping_rule`; with ``stop_when_independent`` also the test of
        :func:`~sklearn_adm.game._stopping.within_noise`). Returns False, with the averaged encoder
        of the last evaluation restored and ``diverged`` set, where the update diverged."""
        s = self.settings
        self.n_iter += 1
        values = self._update(X_train, self.n_iter)
        if not torch.isfinite(values).all():
            self.average.module.load_state_dict(self.last_good)
            self.diverged = True
            return False
        self.history.update(self.n_iter, values)
        if self.n_iter % s.eval_every and self.n_iter != s.max_iter:
            return True
        objective, self.val_terms, codes, self.leader, self.criteria = self._evaluation(
            X_val, self.n_iter, self.history, self.stopping, self.criteria
        )
        self.converged, readings = self.stopping.update(
            self.n_iter, objective, codes, self.leader, self.autoencoder.n_init
        )
        if s.stop_when_independent:
            readings["independent"] = self._within_noise(self.val_terms[1][self.leader], X_val)
            self.converged = self.converged or readings["independent"]
        self.history.evaluation(self.n_iter, objective, self.val_terms, **readings)
        self.last_good = copy.deepcopy(self.average.module.state_dict())
        return True

    def snapshot(self):
        """The averaged encoder as it stands, finished, and the leading start: a model to
        use while the game goes on (:meth:`step` after :meth:`open`, as ``partial_fit``
        plays it)."""
        average = copy.deepcopy(self.average.module)
        average.finish()
        return average, self.leader

    def _update(self, X_train, n_iter):
        """One step of Algorithm 1: ``critic_steps`` critic updates, then one encoder update;
        returns its loss and terms, ``(4, n_init)``."""
        self._train_critic(X_train, self.settings.critic_steps)
        self._decay_learning_rate(n_iter)
        loss, terms = self._encoder_step(X_train)
        return torch.stack([loss, *terms])

    def _evaluation(self, X_val, n_iter, history, stopping, criteria):
        """The held-out evaluation after update ``n_iter``: rank the starts by their mean
        criterion over the last ``rank_window`` evaluations and, at each step of the
        ``narrowing``, let the leading ones alone play on. Returns the objective, the terms,
        the stopping codes, the leader and the criteria kept for ranking."""
        s = self.settings
        objective, val_terms, codes, criterion = self._evaluate(X_val)
        criteria = [*criteria, criterion][-s.rank_window :]
        ranking = torch.stack(criteria).mean(dim=0).argsort(stable=True)
        keep = dict(s.narrowing).get(n_iter, self.autoencoder.n_init)
        if keep < self.autoencoder.n_init:
            if s.narrow_on_penalty:
                ranking = (criterion - objective).argsort(stable=True)
            criteria = self._narrow(ranking[:keep].tolist(), history, stopping, criteria)
            objective, val_terms, codes, criterion = self._evaluate(X_val)
            ranking = torch.stack(criteria).mean(dim=0).argsort(stable=True)
        return objective, val_terms, codes, int(ranking[0]), criteria

    def _stopping_rule(self):
        s = self.settings
        if s.stop_on_objective:
            return ObjectivePlateau(s.tol, s.n_iter_no_change)
        return RepresentationChange(s.tol, s.n_iter_no_change, s.eval_every)

    def _within_noise(self, critic_mse, X_val):
        return within_noise(critic_mse, len(X_val), self.critic.n_features // self.critic.n_groups)


class _MovingAverage:
    """torch's exponential moving average of parameters, as a picklable callable (a game
    that ``partial_fit`` goes on with is pickled with its estimator)."""

    def __init__(self, decay):
        self.decay = decay

    def __call__(self, averages, parameters, n_averaged):
        get_ema_multi_avg_fn(self.decay)(averages, parameters, n_averaged)


def _cut_state(state_dict, index):
    """An optimizer's ``state_dict`` with every per-parameter tensor cut along its first axis
    to ``index(length of that axis)``; scalars (such as Adam's step) are kept."""
    state = {
        key: {
            name: value[index(len(value))] if torch.is_tensor(value) and value.ndim else value
            for name, value in param_state.items()
        }
        for key, param_state in state_dict["state"].items()
    }
    return {**state_dict, "state": state}
