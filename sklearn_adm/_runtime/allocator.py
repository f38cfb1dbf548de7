"""glibc's trim and mmap thresholds during a fit, where the environment fixed them, and the
memory a fit freed handed back to the system when it ends.

By default glibc moves both thresholds with the sizes it has seen, and a fit leaves them
alone: that adjustment cannot be switched back on once a threshold is set, so a fit that
set them could not give the caller's process back as it found it. Where the environment
fixed them (``MALLOC_TRIM_THRESHOLD_``, ``MALLOC_MMAP_THRESHOLD_`` or their
``GLIBC_TUNABLES`` names, as Dask's nanny sets for its workers), every tensor above the
fixed mmap threshold is mapped and unmapped at each training step; a fit then raises both
thresholds while it runs and puts back the environment's values when it ends (the design
page ``doc/design/process.md`` has the measurements).
"""

import ctypes
import functools
import os
import sys
import threading
from contextlib import contextmanager

# glibc's mallopt parameters (malloc.h) and the default of a threshold the environment left
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_DEFAULT_THRESHOLD = 128 * 1024
#: thresholds while training: freed tensors stay with the process for the next step
_TRAINING_THRESHOLD = 64 * 1024 * 1024
#: each threshold's environment variable and its name in ``GLIBC_TUNABLES``
_VARIABLES = {
    _M_TRIM_THRESHOLD: ("MALLOC_TRIM_THRESHOLD_", "glibc.malloc.trim_threshold"),
    _M_MMAP_THRESHOLD: ("MALLOC_MMAP_THRESHOLD_", "glibc.malloc.mmap_threshold"),
}


@functools.cache
def _libc():
    """glibc (its ``mallopt`` and ``malloc_trim``), or None on another C library or
    system."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL("libc.so.6")
        return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None
    except OSError:
        return None


def _environment_thresholds():
    """The thresholds the environment fixed, ``{parameter: bytes}``, or None where it fixed
    neither (glibc then adjusts both itself). Fixing one fixes the other at its default."""
    tunables = dict(
        item.partition("=")[::2]
        for item in os.environ.get("GLIBC_TUNABLES", "").split(":")
        if "=" in item
    )
    values = {
        parameter: os.environ.get(variable, tunables.get(tunable))
        for parameter, (variable, tunable) in _VARIABLES.items()
    }
    if all(value is None for value in values.values()):
        return None
    return {
        parameter: int(value) if value is not None and value.isdigit() else _DEFAULT_THRESHOLD
        for parameter, value in values.items()
    }


_lock = threading.Lock()
#: fits running now inside :func:`training_allocations` (nested, or in several threads)
_active = 0


@contextmanager
def training_allocations():
    """Raise glibc's thresholds for the duration of a fit where the environment fixed them,
    and put the environment's values back when the last of the fits that raised them ends
    (they are process-wide). When the last fit ends, hand the memory freed back to the system
    (glibc's ``malloc_trim``): what threads other than the main one freed stays with the
    process otherwise (design/out-of-core-arrays). With another C library, do nothing."""
    global _active
    libc = _libc()
    resting = None if libc is None else _environment_thresholds()
    with _lock:
        if not _active and resting is not None:
            for parameter in resting:
                libc.mallopt(parameter, _TRAINING_THRESHOLD)
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if not _active and libc is not None:
                for parameter, value in (resting or {}).items():
                    libc.mallopt(parameter, value)
                libc.malloc_trim(0)


def release_free_memory():
    """Hand the memory this process freed back to the system (glibc's ``malloc_trim``;
    nothing with another C library): after a read of a decoded chunk, whose thread keeps
    what it freed otherwise."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)
