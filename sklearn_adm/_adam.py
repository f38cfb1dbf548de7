"""Adam as the game runs it: the fused kernel where the device has one, and for the critic an
update of its largest layer inside the backward pass."""

from contextlib import contextmanager

import torch
from torch.optim.adam import adam

__all__ = ["CriticAdam", "adam_kernel", "make_adam"]

#: A first predictor layer larger than this is updated in the backward pass, this many bytes of
#: it at a time (at d = 2048 features and 32 hidden units the layer holds 512 MiB).
_BLOCK_BYTES = 64 * 1024 * 1024


def adam_kernel(device):
    """Adam's kernel options on ``device``: fused where the device has the kernel (few, large
    ops per step), and capturable on CUDA (its step count stays on the GPU, so a CUDA graph
    can replay it)."""
    return {"fused": device.type in ("cpu", "cuda"), "capturable": device.type == "cuda"}


def make_adam(parameters, learning_rate, device):
    """Adam on ``parameters`` with the kernel options of :func:`adam_kernel`."""
    return torch.optim.Adam(parameters, lr=learning_rate, **adam_kernel(device))


class CriticAdam(torch.optim.Adam):
    """Adam for an :class:`~sklearn_adm.ADMCritic` that never forms its largest gradient.

    The predictors' first layer holds ``d * d * h`` weights. Where it is larger than
    ``_BLOCK_BYTES``, the backward pass run inside :meth:`updating_in_backward` does not let
    autograd form the layer's gradient: the gradient of each block of rows (input features) is
    computed from the layer's input and its output's gradient, and Adam updates that block at
    once. At ``d = 2048`` a step then holds 512 MiB less and writes no fresh pages for the
    gradient. The update is Adam's to rounding, and the layer's moments are kept where Adam keeps
    them, so :meth:`state_dict` and :meth:`load_state_dict` work unchanged.
    """

    def __init__(self, critic, learning_rate, device):
        super().__init__(critic.parameters(), lr=learning_rate, **adam_kernel(device))
        self.critic = critic

    def __getstate__(self):  # Optimizer pickles its state and parameters, not its attributes
        return {**super().__getstate__(), "critic": self.critic}

    @contextmanager
    def updating_in_backward(self):
        """Within this block, a training step: its one backward pass through the critic may
        overwrite what the forward pass saved, and updates the first predictor layer when the
        layer is large (the other parameters get their gradients as usual)."""
        layer = self.critic.predictor_in  # None where the layer is of low rank
        large = layer is not None and layer.numel() * layer.element_size() > _BLOCK_BYTES
        self.critic.backward_once = True
        if large:
            self.critic.input_layer_update = self._update_input_layer
        try:
            yield
        finally:
            self.critic.backward_once = False
            self.critic.input_layer_update = None

    @torch.no_grad()
    def _update_input_layer(self, inputs, grad_hidden):
        """Called in the backward pass with the first predictor layer's input and its output's
        gradient: Adam updates the layer's weights, a block of rows at a time."""
        layer = self.critic.predictor_in
        group = self.param_groups[0]  # the only one: all the critic's parameters
        state = self.state[layer]
        if not state:  # as Adam initialises it
            on_device = group["fused"] or group["capturable"]
            state["step"] = torch.zeros((), device=layer.device if on_device else "cpu")
            state["exp_avg"] = torch.zeros_like(layer)
            state["exp_avg_sq"] = torch.zeros_like(layer)
        groups, size, width = layer.shape
        rows = max(1, _BLOCK_BYTES // (width * layer.element_size()))
        beta1, beta2 = group["betas"]
        # one buffer for every block's gradient, kept from step to step: a fresh one per
        # block would be paged in anew
        buffer = self.critic.workspace.get("layer gradient", layer, (min(rows, size), width))
        for index in range(groups):
            for start in range(0, size, rows):
                block = slice(start, min(start + rows, size))
                grad = buffer[: block.stop - block.start]
                adam(
                    [layer[index, block]],
                    [self.critic.input_layer_gradient(inputs, grad_hidden, index, block, grad)],
                    [state["exp_avg"][index, block]],
                    [state["exp_avg_sq"][index, block]],
                    [],
                    [state["step"].clone()],  # Adam counts this block's step: one more
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
        state["step"] += 1
