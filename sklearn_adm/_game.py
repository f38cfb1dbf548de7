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

import contextlib
import copy
from dataclasses import dataclass

import torch
from torch import nn
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
from tqdm.auto import tqdm

from ._adam import CriticAdam, make_adam
from ._allocator import training_allocations
from ._critic import dependence_mse
from ._critic_step import critic_step, dependence_gradient
from ._stopping import History, ObjectivePlateau, RepresentationChange, within_noise
from ._threads import FitThreads, follow_load
from ._warnings import warn


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

    def keep_starts(self, starts):
        """Keep only the starts listed, in place and in that order (``n_init`` becomes their
        number)."""
        raise NotImplementedError(f"{type(self).__name__} cannot narrow its starts.")


@dataclass(frozen=True)
class GameSettings:
    """The knobs of the game; estimators fill them from their public parameters."""

    dependence_weight: float
    reconstruction_weight: float
    variance_weight: float
    critic_steps: int
    batch_size: int
    #: rows of the critic's minibatches
    critic_batch_size: int
    max_iter: int
    learning_rate: float
    critic_learning_rate: float
    tol: float
    n_iter_no_change: int
    verbose: int = 0
    #: encoder updates between two evaluations on the held-out rows
    eval_every: int = 10
    #: decay of the moving average of the encoder's parameters
    ema_decay: float = 0.95
    #: critic updates on the initial representations before the first encoder update
    warmup_steps: int = 200
    #: held-out rows on which the autoencoder's selection penalty is computed
    selection_rows: int = 1024
    #: evaluations whose mean criterion ranks the starts (one evaluation is noisy)
    rank_window: int = 1
    #: ``(n_iter, keep)`` pairs, in order: after update ``n_iter`` only the ``keep`` leading
    #: starts play on (none: all of them, to the end)
    narrowing: tuple[tuple[int, int], ...] = ()
    #: rank the starts for narrowing by the autoencoder's selection penalty alone (the
    #: objective, still falling at different rates, would hide it)
    narrow_on_penalty: bool = False
    #: the encoder's step size at update t is learning_rate / (1 + t / learning_rate_decay)
    learning_rate_decay: float | None = None
    #: stop when the leading start's held-out objective has not improved by ``tol`` over
    #: ``n_iter_no_change`` updates (instead of when its representation stops changing)
    stop_on_objective: bool = False
    #: stop, before the first update too, when the held-out critic finds no more dependence
    #: than independence gives (:func:`within_noise`)
    stop_when_independent: bool = False
    #: keep the game's encoder only where a critic that did not play finds less dependence
    #: on the held-out rows in it than in the start (:meth:`AdversarialGame.confirm`); for
    #: games whose starts are not narrowed
    confirm_with_fresh_critic: bool = False


@dataclass
class GameResult:
    history: list
    n_iter: int
    converged: bool
    best_init: int
    #: whether an update's loss was not finite (the model of the last evaluation is kept)
    diverged: bool = False


class CriticUpdates:
    """Runs :func:`~._critic_step.critic_step` on minibatches of one shape: eagerly, or on
    CUDA by replaying one captured CUDA graph of the step (a step is tens of small kernels,
    and at the sizes of a fit the GPU otherwise waits on their launches). A batch of another
    shape than the captured one runs eagerly.

    The first ``eager_steps`` updates run eagerly on a side stream, as capture needs (they
    create the optimizer's state); the next one is captured and every later one replays it on
    the batch copied into the captured input. Make a new one when the critic or its optimizer
    changes.
    """

    eager_steps = 3

    def __init__(self, critic, optimizer, device):
        self.critic, self.optimizer = critic, optimizer
        self.use_graph = device.type == "cuda"
        self.done, self.graph, self.batch = 0, None, None

    def __call__(self, batch):
        if self.graph is not None and batch.shape == self.batch.shape:
            self.batch.copy_(batch)
            self.graph.replay()
        elif not self.use_graph or self.graph is not None:  # another shape runs eagerly
            critic_step(self.critic, self.optimizer, batch)
        elif self.done < self.eager_steps:
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                critic_step(self.critic, self.optimizer, batch)
            torch.cuda.current_stream().wait_stream(stream)
        else:
            self.batch, self.graph = batch.clone(), torch.cuda.CUDAGraph()
            self.optimizer.zero_grad()
            with torch.cuda.graph(self.graph):
                critic_step(self.critic, self.optimizer, self.batch)
            self.graph.replay()  # capture records the step without running it
        self.done += 1


@torch.no_grad()
def calibrate(critic, z):
    """Shrinkage ``alpha_j`` fitted on rows the critic did not train on, and the honest MSE.

    ``alpha_j`` minimises the error of ``alpha_j * prediction_j`` on these rows, clipped to
    [0, 1]; the returned MSE is that minimal error, at most 1.
    """
    return calibrated_fit(*critic.target_and_prediction(z))


@torch.no_grad()
def _row_errors(critic, z):
    """Each row's share of each feature's calibrated error of :func:`calibrate`,
    ``(n, d)``: their mean over the rows is that error."""
    target, prediction = critic.target_and_prediction(z)
    alpha, _ = calibrated_fit(target, prediction)
    shrunk = alpha * prediction
    return 1.0 - (2.0 * target - shrunk) * shrunk


def calibrated_fit(target, prediction):
    """:func:`calibrate` from the targets and predictions ``(..., n, d)``, per set of rows
    along the leading axes: ``alpha`` and the MSE, each ``(..., d)``."""
    cross = (target * prediction).mean(dim=-2)
    power = prediction.square().mean(dim=-2)
    alpha = (cross / power.clamp_min(torch.finfo(power.dtype).tiny)).clamp(0.0, 1.0)
    return alpha, dependence_mse(target, alpha.unsqueeze(-2) * prediction)


#: training rows, at most, on whose codes the critics of :meth:`AdversarialGame.confirm` train
_CONFIRMATION_ROWS = 8192
#: standard errors by which the result's held-out error must exceed the start's there
_CONFIRMATION_Z = 2.0

#: seconds of critic training after which a progress bar appears (on a terminal only)
_PROGRESS_DELAY_S = 3.0


def train_critic(critic, z_train, *, steps, batch_size, learning_rate, generator):
    """The game with the encoder fixed: ``steps`` critic updates on minibatches of ``z_train``
    (replayed from a CUDA graph on CUDA, as in the game), a tensor or the
    :class:`~._streaming.StreamedRows` of an array read out of core. Training that lasts
    longer than a few seconds (thousands of features) shows a progress bar on a terminal."""
    device = z_train.device
    update = CriticUpdates(critic, CriticAdam(critic, learning_rate, device), device)
    streamed = not torch.is_tensor(z_train)
    batch_size = min(batch_size, len(z_train))
    progress = tqdm(range(steps), desc="critic", delay=_PROGRESS_DELAY_S, disable=None, leave=False)
    work = critic.predictor_in_bias.numel() * batch_size  # the first hidden layer's elements
    with FitThreads(work), training_allocations(), _opened(z_train):
        for _ in progress:
            if streamed:
                batch = z_train.draw(batch_size, 1, generator)
            else:
                rows = torch.randint(
                    len(z_train), (batch_size,), generator=generator, device=device
                )
                batch = z_train[rows]
            update(batch)
            follow_load()
    return critic


def _opened(rows):
    """``rows`` as a context (a stream reads ahead inside it); a tensor needs none."""
    return contextlib.nullcontext() if torch.is_tensor(rows) else rows


def variance_hinge(z):
    """Per-feature hinge keeping the variance above 1 (paper, "Preventing Variance Collapse")."""
    return torch.relu(1.0 - z.var(dim=0))


class AdversarialGame:
    """Plays Algorithm 1 between an autoencoder and an :class:`~sklearn_adm.ADMCritic`.

    Parameters
    ----------
    autoencoder : Autoencoders
        ``n_init`` starts side by side. The game's training rows (``X_train``: a
        :class:`~._streaming.TensorRows` or :class:`~._streaming.StreamedRows`) and held-out
        rows (``X_val``, a tensor) are already ``prepare``-d.
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
        the codes, written out (:func:`~._critic_step.dependence_gradient`)."""
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
        """``steps`` critic updates against the encoder as it stands; the codes of
        ``critic_steps`` minibatches at a time are computed in one pass. The fit's threads
        follow the load after each such round (:func:`~._threads.follow_load`)."""
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
        ``max_iter`` (:func:`~._base.warn_game_outcome`).
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
        errors = _row_errors(critic, held_out).view(len(held_out), 2, size).mean(dim=2)
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
        """One update (Algorithm 1's), and every ``eval_every`` updates the held-out
        evaluation (:meth:`_evaluation`), which ranks the starts and feeds the stopping rule
        (:meth:`_stopping_rule`; with ``stop_when_independent`` also the test of
        :func:`~._stopping.within_noise`). Returns False, with the averaged encoder of the
        last evaluation restored and ``diverged`` set, where the update diverged."""
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
