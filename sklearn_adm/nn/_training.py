"""Training an :class:`~sklearn_adm.ADMCritic`: its update step (replayed from a CUDA graph on
CUDA),
its calibration on rows it did not train on, a whole training run on fixed representations,
and the variance hinge that keeps a representation from collapsing."""

import contextlib

import torch
from tqdm.auto import tqdm

from .._runtime.allocator import training_allocations
from .._runtime.threads import FitThreads, follow_load
from ._critic import dependence_mse
from ._critic_step import critic_step
from ._optim import CriticAdam


class CriticUpdates:
    """Runs :func:`~sklearn_adm.nn._critic_step.critic_step` on minibatches of one shape:
    eagerly, or on CUDA by replaying one captured CUDA graph of the step (a step is tens of
    small kernels, and at the sizes of a fit the GPU otherwise waits on their launches). A
    batch of another shape than the captured one runs eagerly.

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
def row_errors(critic, z):
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


#: seconds of critic training after which a progress bar appears (on a terminal only)
_PROGRESS_DELAY_S = 3.0


def train_critic(critic, z_train, *, steps, batch_size, learning_rate, generator):
    """The game with the encoder fixed: ``steps`` critic updates on minibatches of ``z_train``
    (replayed from a CUDA graph on CUDA, as in the game), a tensor or the
    :class:`~sklearn_adm._data.streaming.StreamedRows` of an array read out of core. Training that
    lasts longer than a few seconds (thousands of features) shows a progress bar on a terminal."""
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
