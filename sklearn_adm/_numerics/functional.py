"""Elementwise functions the estimators share, computed the fastest way on each device.

On the CPU, torch's ``tanh``, ``exp`` and ``log`` go through vectorised kernels whose speed
depends on the processor. Measured on 4 x 4,096 x 32 floats (the rotation's scores): on an
Intel CPU with AVX-512 (2026-12-03) ``tanh`` took 0.16 ms and ``2 sigmoid(2x) - 1`` 0.75 ms,
``log(1 + exp(-2a))`` 0.43 ms and softplus 1.0 ms; on an AMD CPU with AVX2 (2026-11-28)
``tanh`` took 0.88 ms where ``sigmoid`` took 0.36 ms (4 x 2,048 x 64 floats); on an AMD CPU
with AVX-512 (Zen 4, 2026-12-03, one thread, 4 x 2,196 x 32 floats) ``tanh`` 1.0 ms against
0.25 ms for the sigmoid form, ``log(1 + exp(-2a))`` 0.87 ms against 0.57 ms for softplus.
So the rotations take torch's kernels on AVX-512 CPUs other than AMD's and the sigmoid and
softplus forms elsewhere: the same choice on every run of a machine. NonlinearPICA's hidden
layers keep the sigmoid form on every CPU: on the Intel CPU torch's tanh saved about 5 % of
its fits (200 updates on the docstrings, 3.64-3.94 s against 3.73-4.12 s), but its game
turns rounding into another path (seed 0 of the nonlinear mixture then read a distance
correlation of 0.074 between its components instead of 0.05).
"""

import platform

import torch

__all__ = ["softplus_of_minus_twice", "tanh", "tanh_no_grad"]


def _cpu_vendor():
    """The CPU maker's identifier (``"GenuineIntel"``, ``"AuthenticAMD"``), or ``""`` where
    the system does not say: Linux's ``/proc/cpuinfo``, else ``platform.processor()`` (which
    names it on Windows)."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("vendor_id"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    processor = platform.processor()
    return next((maker for maker in ("GenuineIntel", "AuthenticAMD") if maker in processor), "")


def _vendor_kernels_are_fast(capability, vendor):
    """Whether torch's tanh, exp and log kernels beat the sigmoid and softplus forms on a
    CPU of this vector ``capability`` and maker: on AVX-512, but not on AMD's (see the
    module's docstring)."""
    return capability.startswith("AVX512") and vendor != "AuthenticAMD"


_CPU_KERNELS_FAST = _vendor_kernels_are_fast(torch.backends.cpu.get_cpu_capability(), _cpu_vendor())


def _fast_vector_math(x):
    """Whether ``x``'s device runs torch's tanh, exp and log kernels fast: a GPU, or a CPU
    of :func:`_vendor_kernels_are_fast`."""
    return x.device.type != "cpu" or _CPU_KERNELS_FAST


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
