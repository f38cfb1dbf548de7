"""Keep the C allocator from handing memory back to the system after every training step.

Dask's nanny starts each worker with ``MALLOC_TRIM_THRESHOLD_=65536`` so that a long-running
worker returns freed memory to the system. Setting that variable also fixes glibc's mmap
threshold at 128 KiB: every tensor above it is then mapped and unmapped at each step, and
every step pays for fresh pages. A small PICA fit was measured 1.7x slower in such a process
(2.0 s against 1.2 s on one thread). During a fit the thresholds are raised, and put back to
what the variables say afterwards.
"""

import ctypes
import os
import sys
import threading
from contextlib import contextmanager

# glibc's mallopt parameters (malloc.h) and its default trim and mmap thresholds
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_DEFAULT_THRESHOLD = 128 * 1024
#: thresholds while training: freed tensors stay with the process for the next step
_TRAINING_THRESHOLD = 64 * 1024 * 1024


def _mallopt():
    """glibc's ``mallopt``, or None on another C library or system."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return None


_lock = threading.Lock()
#: fits running now inside :func:`training_allocations` (nested, or in several threads)
_active = 0


@contextmanager
def training_allocations():
    """Raise glibc's trim and mmap thresholds for the duration of a fit where the
    environment fixed them (``MALLOC_TRIM_THRESHOLD_`` or ``MALLOC_MMAP_THRESHOLD_``, as
    Dask's workers do); elsewhere, or with another allocator, do nothing. The thresholds are
    put back when the last of the fits that raised them ends (they are process-wide)."""
    global _active
    trim = os.environ.get("MALLOC_TRIM_THRESHOLD_")
    mmap = os.environ.get("MALLOC_MMAP_THRESHOLD_")
    mallopt = _mallopt() if trim is not None or mmap is not None else None
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
                for parameter, value in ((_M_TRIM_THRESHOLD, trim), (_M_MMAP_THRESHOLD, mmap)):
                    default = _DEFAULT_THRESHOLD
                    mallopt(parameter, int(value) if value and value.isdigit() else default)
