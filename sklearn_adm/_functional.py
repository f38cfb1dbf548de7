"""Elementwise functions the estimators share, computed the fastest way on each device.

On the CPU, torch's ``tanh``, ``exp`` and ``log`` go through a vector-math library whose
speed depends on the processor. Measured on 4 x 4,096 x 32 floats (the rotation's scores):
on an Intel CPU with AVX-512 (2026-12-03) ``tanh`` took 0.16 ms and ``2 sigmoid(2x) - 1``
0.75 ms, ``log(1 + exp(-2a))`` 0.43 ms and softplus 1.0 ms; on an AMD CPU with AVX2
(2026-11-28) ``tanh`` took 0.88 ms where ``sigmoid`` took 0.36 ms (4 x 2,048 x 64 floats).
So the rotations' forms follow the CPU's vector capability, the same on every run of a
machine. NonlinearPICA's hidden layers keep the sigmoid form on every CPU: on the AVX-512
CPU torch's tanh saved about 5 % of its fits (200 updates on the docstrings, 3.64-3.94 s
against 3.73-4.12 s), but its game turns rounding into another path (seed 0 of the nonlinear
mixture then read a distance correlation of 0.074 between its components instead of 0.05).
"""

import torch

__all__ = ["softplus_of_minus_twice", "tanh", "tanh_no_grad"]


_CPU_CAPABILITY = torch.backends.cpu.get_cpu_capability()


def _fast_vector_math(x):
    """Whether ``x``'s device runs torch's tanh, exp and log kernels fast: a GPU, or a CPU
    whose vector capability is AVX-512."""
    return x.device.type != "cpu" or _CPU_CAPABILITY.startswith("AVX512")


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
    """``tanh(x)`` without a gradient: torch's kernel where it is fast, else the sigmoid form."""
    with torch.no_grad():
        return torch.tanh(x) if _fast_vector_math(x) else _sigmoid_tanh(x)


def softplus_of_minus_twice(a):
    """``log(1 + exp(-2 a))`` for ``a >= 0`` (no gradient): the part of ``log cosh(u) = |u| +
    log(1 + exp(-2|u|)) - log 2`` that is not linear. By exp and log where they are fast
    (the rounding of ``1 + exp(-2a)`` costs at most 6e-8), else by softplus."""
    with torch.no_grad():
        if _fast_vector_math(a):
            return a.mul(-2.0).exp_().add_(1.0).log_()
        return torch.nn.functional.softplus(-2.0 * a)
