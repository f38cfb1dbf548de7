"""Elementwise functions the estimators share, by one formula on every CPU.

On the CPU, ``tanh`` is computed as ``2 sigmoid(2x) - 1`` and ``log(1 + exp(-2a))`` by
softplus: the forms that were fastest on the CPUs measured (design/process), and the same
formula on every processor, so that a seeded fit does not
take another path on another CPU maker's machine (``doc/design/process.md``). A GPU runs
torch's own kernels.
"""

import torch

__all__ = ["softplus_of_minus_twice", "tanh", "tanh_no_grad"]


def _sigmoid_tanh(x):
    """``2 sigmoid(2x) - 1``, within 2e-7 of ``tanh(x)`` in float32."""
    return torch.sigmoid(2.0 * x).mul_(2.0).sub_(1.0)


class _Tanh(torch.autograd.Function):
    """``tanh(x)``, computed on the CPU as ``2 sigmoid(2x) - 1``. The backward pass is tanh's
    own, and differentiable."""

    @staticmethod
    def forward(ctx, x):
        y = _sigmoid_tanh(x) if x.device.type == "cpu" else torch.tanh(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return torch.ops.aten.tanh_backward(grad, y)


tanh = _Tanh.apply


def tanh_no_grad(x):
    """``tanh(x)`` without a gradient: the sigmoid form on the CPU, torch's kernel on a GPU."""
    with torch.no_grad():
        return _sigmoid_tanh(x) if x.device.type == "cpu" else torch.tanh(x)


def softplus_of_minus_twice(a):
    """``log(1 + exp(-2 a))`` for ``a >= 0`` (no gradient): the part of ``log cosh(u) = |u| +
    log(1 + exp(-2|u|)) - log 2`` that is not linear. By softplus on the CPU; on a GPU by exp
    and log (the rounding of ``1 + exp(-2a)`` costs at most 6e-8)."""
    with torch.no_grad():
        if a.device.type == "cpu":
            return torch.nn.functional.softplus(-2.0 * a)
        return a.mul(-2.0).exp_().add_(1.0).log_()
