"""The CPU threads a fit computes with: as many as cores are free and its work can use.

Torch and the BLAS split each operation among their threads and wait for the last one.
When another process keeps a core busy, a thread on that core runs only in the time slices
the scheduler leaves it, and every operation of the fit waits for it (design/threads has
the cost). So a fit, and a learned dependence score, computes on

    min(the caller's threads, the cores free, one per ``_ELEMENTS_PER_THREAD`` of work)

threads (at least one): the caller's are what ``torch.get_num_threads()`` says as it starts
(``OMP_NUM_THREADS``, ``torch.set_num_threads`` and ``threadpoolctl.threadpool_limits`` set
it); the cores free are the usable cores less those that other processes kept busy, measured
from the CPU time the system and this process spent over the last interval of at least
``_MIN_INTERVAL_S``. A fit measures as it goes (:func:`follow_load`, after every step of
its iterative solvers) and starts from the last interval only while that is current: a load that
began since then would go unseen, and two threads beside a busy process slow a fit most
before its first reading. Otherwise it starts on one thread, safe under any
load, and takes the free cores at its first reading. The distance engines' numba kernels
run in chunks that any thread may take (``independence._kernels``), so that a thread slowed
by a busy core only takes fewer: they trust a reading up to ``STALE_S`` old. Fits running
side by side in one process share the free cores. When the fit ends, the caller's settings are back.
:func:`training_threads` fixes the number.

Results are reproducible for a given number of threads: the BLAS may sum a product's terms in
another order on another number of threads (a difference of about 1e-7 per step, which a game
of hundreds of steps carries on). Pin the number with :func:`training_threads` for results
that do not depend on the machine's load.
"""

import functools
import math
import sys
import threading
import time
from contextlib import contextmanager
from contextvars import ContextVar
from numbers import Integral

import psutil
from joblib import cpu_count
from threadpoolctl import ThreadpoolController

__all__ = ["FitThreads", "follow_load", "one_thread", "training_threads"]

#: elements of a step's largest tensor per thread: below this a thread has too little to do
_ELEMENTS_PER_THREAD = 65_536
#: a fit starts from the last interval measured only while its end is at most this old;
#: else on one thread until its own first interval is measured
_CURRENT_S = 0.25
#: the same for work in chunks, which any thread may take: a reading older than this says
#: too little of the load now
STALE_S = 3.0
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
        Threads for torch's operations, the BLAS and the distance kernels during each fit;
        None restores the automatic choice.

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
        self._others = None  # over the last interval measured; None: none since a restart

    def _read(self):
        times = psutil.cpu_times()
        idle = times.idle + getattr(times, "iowait", 0.0)
        # Linux counts guests' time in user and nice as well
        guests = getattr(times, "guest", 0.0) + getattr(times, "guest_nice", 0.0)
        own = self._process.cpu_times()
        return time.monotonic(), sum(times) - idle - guests, own.user + own.system

    def age(self):
        """Seconds since the last reading (infinite before the first)."""
        return math.inf if self._last is None else time.monotonic() - self._last[0]

    def restart(self):
        """Begin a new interval now, forgetting the last estimate."""
        self._last, self._others = self._read(), None

    def others_busy(self):
        """Cores other processes used since the last reading; the last estimate (None after
        a restart) while that reading is under ``_MIN_INTERVAL_S`` old, too short to say."""
        if self.age() < _MIN_INTERVAL_S:
            return self._others
        last, now = self._last, self._read()
        self._last = now
        if last is not None:
            used = (now[1] - last[1]) - (now[2] - last[2])
            self._others = max(0.0, used / (now[0] - last[0]))
        return self._others


_lock = threading.Lock()
_meter = None
#: the thread pools' controller and the number of modules imported when it was made
_listed = None
#: fits computing now in this process, which share the free cores
_active = 0
#: the threads of the innermost fit computing in this context
_current = ContextVar("sklearn_adm_fit_threads", default=None)


def _others_busy(current_s):
    """Cores that other processes keep busy, by the shared meter, over the last interval
    while its last reading is at most ``current_s`` old; else None, the meter restarted."""
    global _meter
    with _lock:
        if _meter is None:
            _meter = _LoadMeter()
        if _meter.age() > current_s:
            _meter.restart()
            return None
        return _meter.others_busy()


def one_thread(user_api=None):
    """A context in which the thread pools of ``user_api`` ("blas", "openmp"; None: both)
    compute on one thread, and which gives the caller's back: for small products, whose
    threads would wait for each other, and beside a busy process for its core.
    threadpoolctl's ``threadpool_limits(1)``, from a controller that lists the loaded
    libraries once, not at every call (the list reads ``/proc/self/maps``)."""
    return _controller().limit(limits=1, user_api=user_api)


def _controller():
    """The process's ``ThreadpoolController``, listed again once modules have been imported
    since (an import is what loads a library's thread pool)."""
    global _listed
    if _listed is None or _listed[0] != len(sys.modules):
        _listed = (len(sys.modules), ThreadpoolController())
    return _listed[1]


@functools.cache
def _usable_cores():
    """The cores this process may use (joblib's count, which reads the cgroup's quota)."""
    return min(psutil.cpu_count() or 1, cpu_count())


def _free_cores(others):
    """Usable cores that ``others`` busy ones leave free, shared among this process's fits."""
    return math.floor((_usable_cores() - others) / max(_active, 1) + _BUSY_SHARE)


def follow_load():
    """Let the fit computing in this context follow the load (:meth:`FitThreads.rebalance`):
    a call costs a clock reading until the meter's interval is long enough to measure."""
    threads = _current.get()
    if threads is not None:
        threads.rebalance()


class FitThreads:
    """The threads of one fit, as a context manager: chosen on entry, rebalanced with
    :meth:`rebalance` (:func:`follow_load` reaches it), the caller's settings given back on
    exit.

    Parameters
    ----------
    work : int
        Elements of the largest tensor of the fit's steps (the critic's hidden layer,
        features x units x rows, or the start's search): it bounds the threads that help.
    current_s : float, default=_CURRENT_S
        The work starts from the last reading of the load while it is at most this old, else
        on one thread until :meth:`rebalance` has measured an interval. Work in chunks that
        any thread may take (``independence._kernels``) trusts an older reading: a thread
        that shares its core with another process only takes fewer chunks, where in a fit
        every operation waits for it (``STALE_S``).
    pools : bool, default=True
        Whether torch's and the BLAS's threads follow the choice. Work on threads of its own
        leaves them as the caller set them, so that the products it computes on the side do
        not round with the load, and starts at most one thread a usable core.
    """

    def __init__(self, work, current_s=_CURRENT_S, pools=True):
        import torch  # a fit's dependency, not the package's

        self._torch = torch
        self.work = int(work)
        self.current_s = current_s
        self.pools = pools
        self.n_threads = None

    def __enter__(self):
        global _active
        self._caller = self._torch.get_num_threads()
        if self.pools:
            self._blas = _controller().select(user_api="blas")
            self._blas_caller = [pool.num_threads for pool in self._blas.lib_controllers]
        with _lock:
            _active += 1
        self._token = _current.set(self)
        self._apply(self._choose(entry=True) or 1)
        return self

    def __exit__(self, *exc):
        global _active
        _current.reset(self._token)
        with _lock:
            _active -= 1
        if self.pools:
            self._torch.set_num_threads(self._caller)
            for pool, threads in zip(self._blas.lib_controllers, self._blas_caller, strict=True):
                pool.set_num_threads(threads)

    @property
    def most(self):
        """The most threads the work may use: the number fixed by :func:`training_threads`,
        else the caller's, fewer for small work; without ``pools``, at most the usable
        cores."""
        requested = _requested.get()
        if requested is None:
            requested = min(self._caller, self.work // _ELEMENTS_PER_THREAD)
        return max(1, requested if self.pools else min(requested, _usable_cores()))

    def _choose(self, entry):
        """The threads to compute with now; None where the load is not measured yet."""
        most = self.most
        if most == 1 or _requested.get() is not None:
            return most  # nothing to choose, no load to measure
        if entry:
            others = _others_busy(self.current_s)
        else:
            with _lock:
                others = _meter.others_busy()
        if others is None:
            return None
        return max(1, min(most, _free_cores(others)))

    def _apply(self, n_threads):
        if n_threads != self.n_threads and self.pools:
            self._torch.set_num_threads(n_threads)
            self._blas.limit(limits=n_threads)
        self.n_threads = n_threads

    def rebalance(self):
        """Measure the load since the last reading again and follow it (where the interval
        is too short to measure, the threads stay)."""
        n_threads = self._choose(entry=False)
        if n_threads is not None:
            self._apply(n_threads)
