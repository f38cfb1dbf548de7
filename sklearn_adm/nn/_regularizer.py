"""ADM as one term of any PyTorch loss: the game of Eq. (5) inside a user's training loop."""

import copy
from numbers import Integral, Real

import torch
from torch import nn

from .._runtime.device import resolve_device
from ._critic import ADMCritic, dependence_mse
from ._optim import CriticAdam, adam_kernel
from ._training import CriticUpdates, calibrated_fit, variance_hinge

__all__ = ["ADMRegularizer"]


class ADMRegularizer(nn.Module):
    r"""Adversarial dependence minimisation as a loss term for any PyTorch model.

    The regulariser owns an :class:`ADMCritic` and its optimizer. In a training loop, after
    computing the representation ``z`` of a minibatch::

        z = encoder(x)
        reg.critic_step(z)                      # the critic's updates, on detached z
        loss = task_loss + lam * reg.loss(z)    # the encoder's side of the game
        loss.backward()
        optimizer.step()

    which is Algorithm 1 of the paper with ``L_task + lambda * L_adm`` as the encoder's
    objective (Eq. 5; Eq. 9 for a classifier, Eq. 10 for self-supervised learning).

    Parameters
    ----------
    n_features : int
        Width ``d`` of the representations ``z``, at least 2.
    critic_steps : int, default=1
        Critic updates per call of :meth:`critic_step` (the paper's ``k``).
    critic_hidden : int or tuple of int, default=32
        Hidden widths of each dependency predictor.
    probe_hidden : int or tuple of int, default=16
        Hidden widths of each probe network.
    probes : bool, default=True
        If False, the critic predicts the features themselves: only dependence of the
        conditional mean is removed (predictability minimisation).
    critic_learning_rate : float, default=1e-2
        Step size of the critic's Adam optimizer.
    variance_weight : float, default=1.0
        Weight of the hinge that keeps each feature's variance above 1 (the paper's
        "Preventing Variance Collapse"), added inside :meth:`loss`.
    device : str, torch.device or None, default=None
        Where the critic lives: ``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:N"``, ``"mps"``. None
        places it on the device of the first ``z`` it is given; ``.to(device)`` moves it
        later, with its optimizer's state.

    Attributes
    ----------
    critic : ADMCritic
        Two critics side by side (``n_groups=2``), one per half of each minibatch.
    held_out_mse : torch.Tensor of shape (n_features,)
        The critic's calibrated error on rows it did not train on, at the last :meth:`loss`
        call: about 1 for a feature independent of the others, lower the more it depends on
        them. The figure to monitor; reading it (e.g. ``.tolist()``) synchronises a GPU.

    Notes
    -----
    **Finite data.** A critic can memorise the rows it trains on and then report dependence
    that is not there; pushed by such a critic, the encoder would chase noise. Two guards keep
    :meth:`loss` honest, as the estimators' held-out rows do:

    * *cross-fitting*: each minibatch is cut into its first and second half; one critic trains
      on the first half, the other on the second, and :meth:`loss` scores each half with the
      critic that did not train on it. Rows that keep their place in the batch (fixed batches)
      are therefore never scored by a critic that saw them. Shuffle the rows of the batches,
      as usual, so that both halves come from the same distribution;
    * *calibration*: each prediction is shrunk by the factor ``alpha_j`` in [0, 1] that fits
      the scored rows best (a constant, without gradient); a critic that has learnt nothing
      that carries over to new rows gets ``alpha_j = 0`` and its feature adds neither loss nor
      gradient.

    **Precision and compilation.** The critic always runs in float32, with autocast turned off
    inside :meth:`critic_step` and :meth:`loss`, so it can be used under
    :func:`torch.autocast` (``z`` may be float16 or bfloat16; the gradient flows back in its
    dtype). The encoder may be compiled with :func:`torch.compile`; :meth:`loss` can be
    compiled too, and :meth:`critic_step` runs as it is (on CUDA it replays a captured CUDA
    graph of the update, which is what compiling would buy).

    **Cost.** A call of :meth:`critic_step` costs ``critic_steps`` forward and backward passes
    of the critic on ``(n/2, 2 d)`` inputs, about the cost of one critic on the whole batch; it
    checks that ``z`` is finite, which waits for ``z`` to be computed (one synchronisation with
    a GPU per call).

    Examples
    --------
    >>> import torch
    >>> from sklearn_adm import ADMRegularizer
    >>> _ = torch.manual_seed(0)
    >>> encoder = torch.nn.Linear(4, 3)
    >>> reg = ADMRegularizer(3)
    >>> optimizer = torch.optim.Adam(encoder.parameters(), lr=1e-2)
    >>> for _ in range(5):
    ...     x = torch.randn(256, 4)
    ...     z = encoder(x)
    ...     reg.critic_step(z)
    ...     loss = (z - x[:, :3]).square().mean() + 0.5 * reg.loss(z)
    ...     optimizer.zero_grad()
    ...     loss.backward()
    ...     optimizer.step()
    >>> reg.held_out_mse.shape
    torch.Size([3])
    """

    def __init__(
        self,
        n_features,
        *,
        critic_steps=1,
        critic_hidden=32,
        probe_hidden=16,
        probes=True,
        critic_learning_rate=1e-2,
        variance_weight=1.0,
        device=None,
    ):
        super().__init__()
        self.n_features = _check_integer("n_features", n_features, 2)
        self.critic_steps = _check_integer("critic_steps", critic_steps, 1)
        self.critic_learning_rate = _check_positive("critic_learning_rate", critic_learning_rate)
        self.variance_weight = _check_positive("variance_weight", variance_weight, zero=True)
        if not isinstance(probes, bool):
            raise TypeError(f"probes must be a bool, got {probes!r}.")
        self.critic = ADMCritic(
            2 * self.n_features,
            critic_hidden=critic_hidden,
            probe_hidden=probe_hidden,
            probes=probes,
            n_groups=2,
        )
        self.register_buffer("held_out_mse", torch.ones(self.n_features))
        self._follow_input = device is None
        if not self._follow_input:
            self.to(resolve_device(device))
        self._optimizer = CriticAdam(self.critic, self.critic_learning_rate, self._device)
        self._updates = None

    @property
    def _device(self):
        return self.held_out_mse.device

    def critic_step(self, z):
        """Train the critic for ``critic_steps`` updates on the detached representations.

        Parameters
        ----------
        z : torch.Tensor of shape (n_samples, n_features)
            The encoder's output for a minibatch (at least 4 rows); its gradient is not used.
        """
        z = self._check(z, "critic_step")
        if not bool(torch.isfinite(z).all()):
            raise ValueError(
                "critic_step: z contains NaN or infinity; the encoder's training has diverged "
                "(lower its learning rate or the weight of the ADM term)."
            )
        if self._updates is None:
            self._updates = CriticUpdates(self.critic, self._optimizer, self._device)
        paired = _halves_side_by_side(z.detach().float())
        with torch.enable_grad(), _no_autocast(z):
            for _ in range(self.critic_steps):
                self._updates(paired)

    def loss(self, z):
        """The encoder's side of the game: ``1 - mean critic MSE`` plus the variance hinge.

        Differentiable in ``z``; add it with a weight to the task loss. About 0 for
        independent features, up to 1 for features that the others determine.

        Parameters
        ----------
        z : torch.Tensor of shape (n_samples, n_features)
            The encoder's output for a minibatch, the one :meth:`critic_step` just saw.

        Returns
        -------
        torch.Tensor
            A scalar in float32.
        """
        z = self._check(z, "loss")
        with _no_autocast(z):
            z = z.float()
            first, second = _halves(z)
            # each half scored by the critic that trained on the other half
            target, prediction = self.critic.target_and_prediction(torch.cat([second, first], 1))
            alpha, _ = calibrated_fit(target.detach(), prediction.detach())
            mse = dependence_mse(target, alpha * prediction)
            with torch.no_grad():
                self.held_out_mse.copy_(mse.view(2, -1).mean(dim=0))
            return (1.0 - mse.mean()) + self.variance_weight * variance_hinge(z).mean()

    def _check(self, z, method):
        if not isinstance(z, torch.Tensor):
            raise TypeError(f"{method}: z must be a torch.Tensor, got {type(z).__name__}.")
        if z.ndim != 2 or z.shape[1] != self.n_features:
            raise ValueError(
                f"{method}: z must have shape (n_samples, {self.n_features}), got {tuple(z.shape)}."
            )
        if z.shape[0] < 4:
            raise ValueError(
                f"{method}: z has {z.shape[0]} rows; the regulariser needs at least 4 (two "
                "per half of the batch). Drop a small last batch (DataLoader(..., "
                "drop_last=True))."
            )
        if not z.is_floating_point():
            raise TypeError(f"{method}: z must be a floating-point tensor, got {z.dtype}.")
        if z.device != self._device:
            if not (self._follow_input and self._updates is None):
                raise ValueError(
                    f"{method}: z is on {z.device} but the regulariser is on {self._device}; "
                    f"move it with reg.to({str(z.device)!r})."
                )
            self.to(z.device)
        return z

    def _apply(self, fn, recurse=True):
        """Move or cast the critic, then give its optimizer the state it had, on the new
        device (``.to``, ``.cuda`` and ``.cpu`` all come here)."""
        super()._apply(fn, recurse)
        if "_optimizer" in self.__dict__:
            state = self._optimizer.state_dict()
            self._optimizer = CriticAdam(self.critic, self.critic_learning_rate, self._device)
            for group in state["param_groups"]:  # the kernel choice follows the device
                group.update(adam_kernel(self._device))
            self._optimizer.load_state_dict(state)
            self._updates = None
        return self

    def get_extra_state(self):
        """The optimizer's state, saved in :meth:`state_dict` next to the critic's weights."""
        return {"optimizer": self._optimizer.state_dict()}

    def set_extra_state(self, state):
        # copied, as the weights are: the loaded optimizer must not share tensors with the saved
        self._optimizer.load_state_dict(copy.deepcopy(state["optimizer"]))

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_updates"] = None  # a captured CUDA graph is not copied; it is made again
        return state

    def extra_repr(self):
        return f"n_features={self.n_features}, critic_steps={self.critic_steps}"


def _halves(z):
    """The first and second half of the rows (the last row dropped when their number is odd)."""
    half = len(z) // 2
    return z[:half], z[half : 2 * half]


def _halves_side_by_side(z):
    """``(n/2, 2d)``: the first half's features, then the second half's, so that the critic's
    group 0 trains on the first half and group 1 on the second."""
    return torch.cat(_halves(z), dim=1)


def _no_autocast(z):
    return torch.autocast(device_type=z.device.type, enabled=False)


def _check_integer(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{name} must be an int, got {value!r}.")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}.")
    return int(value)


def _check_positive(name, value, zero=False):
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a float, got {value!r}.")
    if value < 0 or (value == 0 and not zero):
        raise ValueError(f"{name} must be {'>= 0' if zero else '> 0'}, got {value}.")
    return float(value)
