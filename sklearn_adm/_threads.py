"""The CPU threads a fit computes with: as many as cores are free and its work can use.

Torch, numba and the BLAS split each operation among their threads and wait for the last one.
When another process keeps a core busy, a thread on that core runs only in the time slices
the scheduler leaves it, and every operation of the fit waits for it: on 2 cores with one
busy process, PICA on the paper's example took 4 times as long on torch's default 2 threads
as on 1 (see the user guide). So a fit, and a learned dependence score, computes on

    min(the caller's threads, the cores free, one per ``_ELEMENTS_PER_THREAD`` of work)

threads (at least one): the caller's are what ``torch.get_num_threads()`` says as it starts
(``OMP_NUM_THREADS``, ``torch.set_num_threads`` and ``threadpoolctl.threadpool_limits`` set
it); the cores free are the usable cores less those that other processes kept busy, measured
from the CPU time the system and this process spent, when the fit starts and again as it goes
(:meth:`FitThreads.rebalance`). Fits running side by side in one process share the free cores.
When the fit ends, the caller's settings are back. :func:`training_threads` fixes the number.

Results are reproducible for a given number of threads: the BLAS may sum a product's terms in
another order on another number of threads (a difference of about 1e-7 per step, which a game
of hundreds of steps carries on). Pin the number with :func:`training_threads` for results
that do not depend on the machine's load.
"""

import math
import threading
import time
from contextlib import contextmanager
from contextvars import ContextVar
from numbers import Integral

import psutil
from joblib import cpu_count
from threadpoolctl import ThreadpoolController

__all__ = ["FitThreads", "training_threads"]

#: elements of a step's largest tensor per thread: below this a thread has too little to do
_ELEMENTS_PER_THREAD = 65_536
#: a reading of the CPU's times older than this says too little of the load now
_STALE_S = 3.0
#: the shortest interval over which busy cores are measured: the system counts CPU time in
#: ticks of 10 ms, so shorter intervals read one tick as a tenth of a core or more
_MIN_INTERVAL_S = 0.05
#: a core counts as free while other processes use less than this share of it
_BUSY_SHARE = 0.5

_requested = ContextVar("sklearn_adm_training_threads", default=None)


@contextmanager
def training_threads(n_threads):
    """Fix the number of CPU threads that fits compute with, inside a ``with`` block.

    By default each fit of :class:`~sklearn_adm.PICA`, :class:`~sklearn_adm.ICA`,
    :class:`~sklearn_adm.NonlinearPICA` and each learned or distance-correlation score of
    :class:`~sklearn_adm.DependenceScorer` chooses its threads: as many as cores are free
    (other processes' load is measured as the fit starts and as it goes), at most what
    ``torch.get_num_threads()`` allows, and fewer for small work. Inside this block they use
    ``n_threads`` instead, which also makes a seeded fit give the same result whatever the
    machine's load (the BLAS sums in another order on another number of threads).

    Parameters
    ----------
    n_threads : int or None
        Threads for torch's operations, the BLAS and numba during each fit; None restores the
        automatic choice.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_adm import DependenceScorer, training_threads
    >>> X = np.random.default_rng(0).laplace(size=(500, 4))
    >>> with training_threads(1):
    ...     dependence = DependenceScorer().score(X)
    """
    if n_threads is not None and (
        not isinstance(n_threads, Integral) or isinstance(n_threads, bool) or n_threads < 1
    ):
        raise ValueError(f"n_threads must be a positive int or None, got {n_threads!r}.")
    token = _requested.set(None if n_threads is None else int(n_threads))
    try:
        yield
    finally:
        _requested.reset(token)


class _LoadMeter:
    """Cores that other processes kept busy between two readings of the CPU's times."""

    def __init__(self):
        self._process = psutil.Process()
        self._last = None  # (seconds, system's busy CPU seconds, this process's)
        self._others = 0.0

    def _read(self):
        times = psutil.cpu_times()
        idle = times.idle + getattr(times, "iowait", 0.0)
        # Linux counts guests' time in user and nice as well
        guests = getattr(times, "guest", 0.0) + getattr(times, "guest_nice", 0.0)
        own = self._process.cpu_times()
        return time.monotonic(), sum(times) - idle - guests, own.user + own.system

    def others_busy(self, fresh):
        """Cores other processes used since the last reading. With ``fresh``, a reading too
        old to tell the load now is replaced by one over ``_MIN_INTERVAL_S`` from now."""
        now = self._read()
        last = self._last
        if last is None or (fresh and now[0] - last[0] > _STALE_S):
            time.sleep(_MIN_INTERVAL_S)
            last, now = now, self._read()
        elif now[0] - last[0] < _MIN_INTERVAL_S:
            return self._others  # too short to measure: the last estimate stands
        elapsed = now[0] - last[0]
        self._others = max(0.0, ((now[1] - last[1]) - (now[2] - last[2])) / elapsed)
        self._last = now
        return self._others


_lock = threading.Lock()
_meter = None
#: fits computing now in this process, which share the free cores
_active = 0


def _free_cores(fresh):
    """Usable cores that other processes leave free, shared among this process's fits."""
    global _meter
    with _lock:
        if _meter is None:
            _meter = _LoadMeter()
        others = _meter.others_busy(fresh)
        active = max(_active, 1)
    free = min(psutil.cpu_count() or 1, cpu_count()) - others
    return math.floor(free / active + _BUSY_SHARE)


class FitThreads:
    """The threads of one fit, as a context manager: chosen on entry, rebalanced with
    :meth:`rebalance`, the caller's settings given back on exit.

    Parameters
    ----------
    work : int
        Elements of the largest tensor of a training step (the critic's hidden layer,
        features x units x rows): it bounds the threads that help.
    """

    def __init__(self, work):
        import torch  # a fit's dependency, not the package's

        self._torch = torch
        self.work = int(work)
        self.n_threads = None

    def __enter__(self):
        global _active
        self._caller = self._torch.get_num_threads()
        self._blas = ThreadpoolController().select(user_api="blas")
        self._blas_caller = [pool.num_threads for pool in self._blas.lib_controllers]
        with _lock:
            _active += 1
        self._apply(self._choose(fresh=True))
        return self

    def __exit__(self, *exc):
        global _active
        with _lock:
            _active -= 1
        self._torch.set_num_threads(self._caller)
        for pool, threads in zip(self._blas.lib_controllers, self._blas_caller, strict=True):
            pool.set_num_threads(threads)

    def _choose(self, fresh):
        requested = _requested.get()
        if requested is not None:
            return requested
        most = min(self._caller, self.work // _ELEMENTS_PER_THREAD)
        if most <= 1:
            return 1  # nothing to choose, no load to measure
        return max(1, min(most, _free_cores(fresh)))

    def _apply(self, n_threads):
        if n_threads != self.n_threads:
            self._torch.set_num_threads(n_threads)
            self._blas.limit(limits=n_threads)
            self.n_threads = n_threads

    def rebalance(self):
        """Measure the load since the last reading again and follow it."""
        self._apply(self._choose(fresh=False))
