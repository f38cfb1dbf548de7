"""The game's optimizers: Adam with the fused kernel where the device has one, and for the
critic an update of its largest layer by blocks, its whole gradient never formed.

They hold their state as :class:`torch.optim.Optimizer` does, in the same ``state_dict``
format, and step with :func:`torch.optim.adam.adam`, but are not ``torch.optim`` optimizers:
the first call of any method of one imports ``torch._dynamo`` (for its compiler hooks), which
costs a first fit about a second and a half on a CPU (``doc/design/game-cost.md``).
"""

from collections import defaultdict

import torch
from torch.optim.adam import adam

__all__ = ["Adam", "CriticAdam", "GameOptimizer", "adam_kernel", "make_adam"]

#: A first predictor layer larger than this is updated by blocks of this many bytes (at
#: d = 2048 features and 32 hidden units the layer holds 512 MiB).
_BLOCK_BYTES = 64 * 1024 * 1024


def adam_kernel(device):
    """Adam's kernel options on ``device``: fused where the device has the kernel (few, large
    ops per step), and capturable on CUDA (its step count stays on the GPU, so a CUDA graph
    can replay it)."""
    return {"fused": device.type in ("cpu", "cuda"), "capturable": device.type == "cuda"}


def make_adam(parameters, learning_rate, device):
    """Adam on ``parameters`` with the kernel options of :func:`adam_kernel`."""
    return Adam(parameters, learning_rate, **adam_kernel(device))


class GameOptimizer:
    """What the game uses of :class:`torch.optim.Optimizer`: one group of parameters with its
    hyperparameters (``param_groups``), a state per parameter (``state``), ``zero_grad`` and a
    ``state_dict`` in torch's format (state keyed by the parameters' positions), which
    ``load_state_dict`` reads back onto the parameters' devices. Subclasses write ``step``."""

    def __init__(self, params, defaults):
        self.defaults = dict(defaults)
        self.state = defaultdict(dict)
        self.param_groups = [{**self.defaults, "params": list(params)}]
        if not self.param_groups[0]["params"]:
            raise ValueError("optimizer got an empty parameter list")

    def _parameters(self):
        return [p for group in self.param_groups for p in group["params"]]

    def zero_grad(self):
        """Drop the gradients (torch's ``zero_grad(set_to_none=True)``)."""
        for p in self._parameters():
            p.grad = None

    def state_dict(self):
        position = {id(p): i for i, p in enumerate(self._parameters())}
        groups = []
        for group in self.param_groups:
            groups.append({key: value for key, value in group.items() if key != "params"})
            groups[-1]["params"] = [position[id(p)] for p in group["params"]]
        state = {position[id(p)]: dict(values) for p, values in self.state.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups) or any(
            len(saved["params"]) != len(group["params"])
            for saved, group in zip(groups, self.param_groups, strict=True)
        ):
            raise ValueError("the state_dict holds other parameter groups than the optimizer.")
        parameters = self._parameters()
        self.state = defaultdict(dict)
        for saved, group in zip(groups, self.param_groups, strict=True):
            group.update({key: value for key, value in saved.items() if key != "params"})
        for index, values in state_dict["state"].items():
            p = parameters[int(index)]
            self.state[p] = {name: self._placed(name, value, p) for name, value in values.items()}

    def _step_device(self, p):
        """Where ``p``'s step count lives: with ``p`` where the kernel keeps it on the device
        (fused or capturable), else on the CPU, as torch's Adam keeps it."""
        group = self.param_groups[0]
        return p.device if group.get("fused") or group.get("capturable") else "cpu"

    def _placed(self, name, value, p):
        """A state value moved to where ``step`` expects it: with ``p`` (in its dtype), a step
        count where :meth:`_step_device` says."""
        if not torch.is_tensor(value):
            return value
        if name != "step":
            return value.to(dtype=p.dtype, device=p.device)
        return value.to(device=self._step_device(p))


class Adam(GameOptimizer):
    """Adam (Kingma and Ba), as :class:`torch.optim.Adam` with its default hyperparameters
    steps it, through the same functional kernel: ``fused`` where the device has one,
    ``capturable`` to keep the step count on the GPU so that a CUDA graph can replay it."""

    def __init__(self, params, lr, *, fused=False, capturable=False):
        defaults = {
            "lr": lr,
            "betas": (0.9, 0.999),
            "eps": 1e-8,
            "weight_decay": 0.0,
            "foreach": None,
            "fused": fused,
            "capturable": capturable,
        }
        super().__init__(params, defaults)

    def _parameter_state(self, p):
        """``p``'s moments and step count, made as torch's Adam makes them on first use."""
        state = self.state[p]
        if not state:
            state["step"] = torch.zeros((), device=self._step_device(p))
            state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
        return state

    @torch.no_grad()
    def step(self):
        group = self.param_groups[0]
        params = [p for p in group["params"] if p.grad is not None]
        if not params:
            return
        states = [self._parameter_state(p) for p in params]
        self._adam(
            params,
            [p.grad for p in params],
            [state["exp_avg"] for state in states],
            [state["exp_avg_sq"] for state in states],
            [state["step"] for state in states],
        )

    def _adam(self, params, grads, exp_avgs, exp_avg_sqs, steps):
        """One Adam update of ``params``; the functional kernel counts the ``steps``."""
        group = self.param_groups[0]
        beta1, beta2 = group["betas"]
        adam(
            params,
            grads,
            exp_avgs,
            exp_avg_sqs,
            [],
            steps,
            foreach=group["foreach"],
            fused=group["fused"],
            capturable=group["capturable"],
            amsgrad=False,
            beta1=beta1,
            beta2=beta2,
            lr=group["lr"],
            weight_decay=group["weight_decay"],
            eps=group["eps"],
            maximize=False,
        )


class CriticAdam(Adam):
    """Adam for an :class:`~sklearn_adm.ADMCritic` that never forms its largest gradient.

    The predictors' first layer holds ``d * d * h`` weights. Where it is larger than
    ``_BLOCK_BYTES``, a training step (:func:`~sklearn_adm.nn._critic_step.critic_step`) does not
    form the layer's gradient: it hands the layer's input and its output's gradient to
    :meth:`update_input_layer`, which computes the gradient of each block of rows (the units of some
    predictors) and lets Adam update that block at once. At ``d = 2048`` a step then holds 512 MiB
    less and writes no fresh pages for the gradient. The update is Adam's to rounding, and the
    layer's moments are kept where Adam keeps them, so :meth:`state_dict` and
    :meth:`load_state_dict` work unchanged.
    """

    def __init__(self, critic, learning_rate, device):
        super().__init__(critic.parameters(), learning_rate, **adam_kernel(device))
        self.critic = critic

    @property
    def updates_input_layer(self):
        """Whether the first predictor layer is too large for a whole gradient: a training
        step then hands :meth:`update_input_layer` the layer's input and output gradient."""
        layer = self.critic.predictor_in  # None where the layer is of low rank
        return layer is not None and layer.numel() * layer.element_size() > _BLOCK_BYTES

    @torch.no_grad()
    def update_input_layer(self, inputs, grad_hidden):
        """Adam's update of the first predictor layer, a block of rows at a time, from the
        layer's input ``(groups, s, n)`` and its output's gradient."""
        layer = self.critic.predictor_in
        state = self._parameter_state(layer)
        groups, units, size = layer.shape
        width = units // size  # each predictor's h units are a block of h rows
        # a block holds the units of whole predictors
        predictors = max(1, _BLOCK_BYTES // (width * size * layer.element_size()))
        predictors = min(predictors, size)
        # one buffer for every block's gradient, kept from step to step: a fresh one per
        # block would be paged in anew
        buffer = self.critic.workspace.get("layer gradient", layer, (predictors * width, size))
        for index in range(groups):
            for start in range(0, size, predictors):
                features = slice(start, min(start + predictors, size))
                rows = slice(features.start * width, features.stop * width)
                grad = buffer[: rows.stop - rows.start]
                self._adam(
                    [layer[index, rows]],
                    [self.critic.input_layer_gradient(inputs, grad_hidden, index, features, grad)],
                    [state["exp_avg"][index, rows]],
                    [state["exp_avg_sq"][index, rows]],
                    [state["step"].clone()],  # Adam counts this block's step: one more
                )
        state["step"] += 1


class NormalisedMomentum(GameOptimizer):
    """SGD with momentum, each step divided by the running root-mean-square of the gradient
    of the whole tensor (Adam with one second moment per tensor, not per entry).

    Adam rescales every entry on its own, which turns a frame's gradient in an arbitrary
    direction: a tiny but informative component (such as the variance cost of moving one
    column rather than another) is blown up to the same step as a large one. One scale per
    tensor keeps the direction of the gradient, so the update commutes with rotations.
    """

    def __init__(self, params, lr, betas=(0.9, 0.99)):
        super().__init__(params, {"lr": lr, "betas": betas})

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["momentum"] = torch.zeros_like(p)
                    state["power"] = torch.zeros((), dtype=p.dtype, device=p.device)
                state["step"] += 1
                t = state["step"]
                state["momentum"].lerp_(p.grad, 1 - beta1)
                # mean squared norm of a column (the last axis indexes columns)
                state["power"].lerp_(p.grad.square().sum(dim=-2).mean(), 1 - beta2)
                scale = (state["power"] / (1 - beta2**t)).sqrt().clamp_min(1e-12)
                p.sub_(state["momentum"] / ((1 - beta1**t) * scale), alpha=group["lr"])
