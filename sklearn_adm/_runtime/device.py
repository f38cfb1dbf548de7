"""Resolve the ``device`` parameter of every estimator into a ``torch.device``."""

import re

import torch

_DEVICE_PATTERN = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")


def resolve_device(device):
    """Return the ``torch.device`` that ``device`` names, or raise a clear ``ValueError``.

    ``"auto"`` picks CUDA when it is available and the CPU otherwise; an explicit accelerator
    that is not available is an error rather than a silent fallback.
    """
    if isinstance(device, torch.device):
        device = str(device)
    if not isinstance(device, str) or not _DEVICE_PATTERN.match(device):
        raise ValueError(
            f"device must be 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps'; got {device!r} instead."
        )
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ValueError(
                f"device={device!r} was requested but CUDA is not available on this machine; "
                "use device='cpu' or device='auto'."
            )
        index = torch.device(device).index
        if index is not None and index >= torch.cuda.device_count():
            raise ValueError(
                f"device={device!r} was requested but only {torch.cuda.device_count()} CUDA "
                "device(s) are available."
            )
    if device == "mps" and not torch.backends.mps.is_available():
        raise ValueError(
            "device='mps' was requested but MPS is not available on this machine; "
            "use device='cpu' or device='auto'."
        )
    return torch.device(device)
