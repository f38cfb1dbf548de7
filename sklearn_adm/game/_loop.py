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
import dataclasses

import torch
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
from tqdm.auto import tqdm

from .._runtime.threads import follow_load
from .._runtime.warnings import warn
from ..nn._critic_step import dependence_gradient
from ..nn._optim import CriticAdam
from ..nn._training import CriticUpdates, calibrate
from ._history import History
from ._policy import Evaluation
from ._settings import GameResult


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
        The game's numbers.
    policies : GamePolicies
        Which start leads and plays on, when it stops, and whether a critic that did not play
        must confirm the result; each estimator chooses them (``_game_policies``). Each reads
        the held-out evaluations and returns a decision that the game applies
        (:mod:`~sklearn_adm.game._policy`).
    generator : torch.Generator
        Draws the minibatches; seeded by the estimator's ``random_state``.
    """

    def __init__(self, autoencoder, critic, settings, policies, generator):
        self.autoencoder = autoencoder
        self.critic = critic
        self.settings = settings
        self.confirmation = policies.confirmation
        # read in this order: the leader the rules read is the selection's
        self.policies = (policies.selection, *policies.stopping, policies.confirmation)
        self.generator = generator
        device = next(critic.parameters()).device
        self.encoder_optimizer = autoencoder.make_optimizer(settings.learning_rate, device)
        self.average = AveragedModel(
            autoencoder, multi_avg_fn=_MovingAverage(settings.ema_decay), use_buffers=True
        )
        self.alpha = torch.ones(critic.n_features, device=device)
        self.critic_update = self._critic_updates(device)
        for policy in self.policies:
            policy.open(self)
        self.history = History()
        self.n_iter, self.leader, self.val_terms = 0, 0, None
        self.converged, self.diverged = False, False
        self.start = self.last_good = None  # the averaged encoder's state at open, and since

    def __getstate__(self):
        """A generator is pickled as its device and state (torch's pickling of generators
        is recent)."""
        state = dict(self.__dict__)
        state["generator"] = (str(self.generator.device), self.generator.get_state())
        return state

    def __setstate__(self, state):
        device, generator_state = state["generator"]
        state["generator"] = torch.Generator(device=device)
        state["generator"].set_state(generator_state)
        self.__dict__.update(state)

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

    def _narrow(self, keep):
        """Let the starts ``keep`` alone play on, in that order: cut the autoencoder, its
        average, the critic, their optimizers' states, the history and the policies' records
        down to them, so that they play on as they would have with the others."""
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
        self.history.keep_starts(keep)
        for policy in self.policies:
            policy.keep_starts(keep, n_init)

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

    def play(self, X_train, X_val, steps=None, desc="ADM"):
        """Play the game; the one entry point of ``fit`` and ``partial_fit``.

        The critic warms up at the first call (:meth:`open`). Then, with ``steps`` None,
        updates follow (:meth:`step`) until a stopping rule says the game has converged or
        ``max_iter`` is reached, and ``autoencoder`` is left holding the result; with a
        budget of ``steps`` (a stream's batch), exactly that many updates follow, whatever
        the rules read, and the result is a copy, the game going on. An update that diverges
        ends the call with the model of the last evaluation restored.

        Returns a :class:`GameResult`: ``model``, the averaged encoder finished and confirmed
        (:meth:`result`); ``best_init``, the leading start, whose history it holds; and
        whether this call diverged, which the estimator reports
        (:func:`~sklearn_adm.game._history.warn_game_outcome`).
        """
        s = self.settings
        if self.start is None:  # not opened yet
            self.open(X_train, X_val, desc)
        self.diverged, played = False, 0
        budget = s.max_iter - self.n_iter if steps is None else steps
        progress = tqdm(total=budget, desc=desc, disable=s.verbose < 1, leave=False)
        try:
            # a budget of steps is played whatever the rules read
            while played < budget and not (steps is None and self.converged):
                if not self.step(X_train, X_val):
                    break
                played += 1
                progress.update()
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
        encoder = self.autoencoder if steps is None else copy.deepcopy(self.average.module)
        model = self.result(encoder, X_train, X_val)
        history = self.history.entries(self.leader)
        return GameResult(
            history, self.n_iter, self.converged, self.leader, self.diverged, model=model
        )

    def open(self, X_train, X_val, desc="ADM"):
        """Warm the critic up on the starts as they are; a policy that reads the start
        (``reads_start``) may end the game before its first update."""
        self._train_critic(X_train, self.settings.warmup_steps)
        policies = [policy for policy in self.policies if policy.reads_start]
        if policies:
            objective, terms, codes, criterion = self._evaluate(X_val)
            self.leader = int(criterion.argmin())
            evaluation = self._reading(0, objective, terms, codes, criterion, X_train, X_val)
            evaluation, readings = self._decide(policies, evaluation)
            self.converged = evaluation.stop
            if self.converged:
                self.history.evaluation(0, evaluation.objective, evaluation.terms, **readings)
                if self.settings.verbose:
                    tqdm.write(f"{desc}: the held-out critic finds no dependence left; no update.")
        self.last_good = self.start = copy.deepcopy(self.average.module.state_dict())

    def step(self, X_train, X_val):
        """One update (Algorithm 1's), and every ``eval_every`` updates the held-out evaluation,
        which the policies read in turn (:meth:`_decide`). Returns False, with the averaged
        encoder of the last evaluation restored and ``diverged`` set, where the update
        diverged."""
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
        evaluation = self._reading(self.n_iter, *self._evaluate(X_val), X_train, X_val)
        evaluation, readings = self._decide(self.policies, evaluation)
        self.converged, self.val_terms = evaluation.stop, evaluation.terms
        self.history.evaluation(self.n_iter, evaluation.objective, evaluation.terms, **readings)
        self.last_good = copy.deepcopy(self.average.module.state_dict())
        return True

    def _decide(self, policies, evaluation):
        """Hand ``evaluation`` to each of ``policies`` in turn and apply its decision before
        the next one reads: the starts kept play on alone and are evaluated again, the leader
        is the one decided, and the game stops where any policy says so. Returns the last
        evaluation, which says whether to stop, and all the readings for the history."""
        readings = {}
        for policy in policies:
            decision = policy.decide(evaluation)
            if decision.keep is not None:
                self._narrow(decision.keep)
                X_val = evaluation.data[1]
                again = self._reading(evaluation.n_iter, *self._evaluate(X_val), *evaluation.data)
                evaluation = dataclasses.replace(again, stop=evaluation.stop)
            if decision.leader is not None:
                self.leader = decision.leader
            evaluation = dataclasses.replace(
                evaluation, leader=self.leader, stop=evaluation.stop or decision.stop
            )
            readings.update(decision.readings)
        return evaluation, readings

    def absorb(self, X, seed):
        """Let the starts absorb a stream's new batch ``X`` (their draws seeded by ``seed``:
        a stream gives the same model every time, and torch's global generator is left
        alone)."""
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.autoencoder.absorb(X)

    def result(self, encoder, X_train, X_val):
        """``encoder`` given the averaged encoder's state as it stands, finished and read by the
        confirmation: the game's result, or, on a copy of ``average.module``, a model to use
        while the game goes on."""
        encoder.load_state_dict(self.average.module.state_dict())
        encoder = self.finished(encoder)
        final = Evaluation(
            n_iter=self.n_iter,
            leader=self.leader,
            n_init=self.autoencoder.n_init,
            game=self,
            data=(X_train, X_val),
            encoder=encoder,
        )
        decision = self.confirmation.decide(final)
        if decision.restore_start:
            encoder.load_state_dict(self.start_encoder().state_dict())
        if decision.readings:
            self.history.note(**decision.readings)
        return encoder

    def finished(self, encoder):
        """``encoder`` after its final solve (``finish``)."""
        encoder.finish()
        return encoder

    def start_encoder(self):
        """The encoder as the game found it (its start as a stream's batches refined it),
        finished."""
        start = copy.deepcopy(self.autoencoder)
        start.load_state_dict(self.autoencoder.start_state(self.start))
        return self.finished(start)

    def _update(self, X_train, n_iter):
        """One step of Algorithm 1: ``critic_steps`` critic updates, then one encoder update;
        returns its loss and terms, ``(4, n_init)``."""
        self._train_critic(X_train, self.settings.critic_steps)
        self._decay_learning_rate(n_iter)
        loss, terms = self._encoder_step(X_train)
        return torch.stack([loss, *terms])

    def _reading(self, n_iter, objective, terms, codes, criterion, X_train, X_val):
        """The :class:`~sklearn_adm.game._policy.Evaluation` the policies read."""
        n_init = self.autoencoder.n_init
        return Evaluation(
            n_iter=n_iter,
            objective=objective,
            terms=terms,
            codes=codes,
            leader=self.leader,
            n_init=n_init,
            n_rows=len(X_val),
            n_features=self.critic.n_features // n_init,
            criterion=criterion,
            game=self,
            data=(X_train, X_val),
        )


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
