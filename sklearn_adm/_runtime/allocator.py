"""Keep the C allocator from handing memory back to the system after every training step.

A training step allocates tensors of a few MiB and frees them at its end. glibc returns the
freed top of its heap to the system once it exceeds the trim threshold, so the next step
pays for fresh pages, zeroed by the kernel. By default glibc moves its thresholds with the
sizes it has seen, which does not prevent this: a critic step at 32 features (512 rows) took
about 800 page faults and 5.1-6.7 ms, against none and 3.5-4.1 ms with the thresholds raised.
Dask's nanny starts each worker with ``MALLOC_TRIM_THRESHOLD_=65536``, which also fixes the
mmap threshold at 128 KiB: every tensor above it is then mapped and unmapped at each step (a
small PICA fit was 1.7x slower in such a process).

During a fit both thresholds are raised. Afterwards they are put back to what the
environment variables say, or, where the environment left them alone, to the highest values
glibc's own adjustment reaches (its adjustment cannot be switched back on once a threshold
has been set). Nothing changes them outside a fit: a loop of the user's that trains an
:class:`~sklearn_adm.ADMCritic` keeps the process's settings (at 256 features a plain Adam
step faulted in about 7,000 pages, 46.7-52.2 ms against 33.0-35.0 ms with the thresholds
raised: such a loop can set ``MALLOC_TRIM_THRESHOLD_`` and ``MALLOC_MMAP_THRESHOLD_``).
"""

import ctypes
import os
import sys
import threading
from contextlib import contextmanager

# glibc's mallopt parameters (malloc.h) and its default trim and mmap thresholds
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_DEFAULT_THRESHOLD = 128 * 1024
#: the highest thresholds glibc's dynamic adjustment sets (malloc.c,
#: DEFAULT_MMAP_THRESHOLD_MAX on 64-bit systems, and twice it for trimming)
_DYNAMIC_CEILING = {_M_MMAP_THRESHOLD: 32 * 1024 * 1024, _M_TRIM_THRESHOLD: 64 * 1024 * 1024}
#: thresholds while training: freed tensors stay with the process for the next step
_TRAINING_THRESHOLD = 64 * 1024 * 1024
_VARIABLES = {
    _M_TRIM_THRESHOLD: "MALLOC_TRIM_THRESHOLD_",
    _M_MMAP_THRESHOLD: "MALLOC_MMAP_THRESHOLD_",
}


def _mallopt():
    """glibc's ``mallopt``, or None on another C library or system."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return None


def _environment_fixed():
    """Whether the environment fixed a threshold (glibc then adjusts none by itself)."""
    return any(variable in os.environ for variable in _VARIABLES.values())


def _resting_threshold(parameter, fixed):
    """The value ``parameter`` rests at outside fits: its environment variable's, where the
    environment fixed a threshold (an unset or unreadable one is glibc's default then), else
    glibc's dynamic ceiling."""
    if not fixed:
        return _DYNAMIC_CEILING[parameter]
    value = os.environ.get(_VARIABLES[parameter], "")
    return int(value) if value.isdigit() else _DEFAULT_THRESHOLD


_lock = threading.Lock()
#: fits running now inside :func:`training_allocations` (nested, or in several threads)
_active = 0


def _rest(mallopt):
    """Put the thresholds at their values outside fits; called with ``_lock`` held."""
    fixed = _environment_fixed()
    for parameter in (_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD):
        mallopt(parameter, _resting_threshold(parameter, fixed))


@contextmanager
def training_allocations():
    """Raise glibc's trim and mmap thresholds for the duration of a fit, and put them back
    (see the module's docstring) when the last of the fits that raised them ends: they are
    process-wide. With another C library, do nothing."""
    global _active
    mallopt = _mallopt()
    if mallopt is None:
        yield
        return
    with _lock:
        if not _active:
            mallopt(_M_TRIM_THRESHOLD, _TRAINING_THRESHOLD)
            mallopt(_M_MMAP_THRESHOLD, _TRAINING_THRESHOLD)
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if not _active:
                _rest(mallopt)
