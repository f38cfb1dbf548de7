"""What the exact distance engines share (a leaf: it imports none of them): numba kernels
run in chunks on the threads a fit would use, and the ratio that turns distance covariances
into a correlation."""

import contextlib
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .._runtime.threads import STALE_S, FitThreads

#: chunks of a kernel's loop for each thread that may run it: a thread slowed by another
#: process's load takes fewer of them, and the others take the rest
CHUNKS_PER_THREAD = 8


def run_serially(kernel, count, room, *args, interleave=False, grain=1):
    """The runner of :func:`kernel_threads` on the calling thread alone: ``kernel(*args,
    *room(), 0, count, 1)``, one chunk."""
    kernel(*args, *room(), 0, count, 1)


@contextlib.contextmanager
def kernel_threads(work):
    """A runner of numba kernels on the threads a fit would use for ``work`` elements in all
    (:class:`~sklearn_adm._runtime.threads.FitThreads`, following the load; at most one a
    core): inside the block, ``run(kernel, count, room, *args, interleave=False, grain=1)``
    calls ``kernel(*args, *room(), first, stop, step)`` for each chunk ``range(first, stop,
    step)`` of ``range(count)``, the calling thread first, helpers as the load allows;
    ``room()`` makes a thread's work arrays. Chunks are runs of at least ``grain`` items
    where there are enough, or with ``interleave`` every ``step``-th item, so that the
    threads work on neighbouring items at any time (column pairs that share a column then
    read it from the cache together). Each kernel is compiled serial and without the GIL: a
    chunk's results are the same on any thread, and numba's parallel kernels, which compile
    several times longer and start an OpenMP pool of their own, are not needed. Torch's and
    the BLAS's threads stay the caller's: a product computed in the block rounds alike
    under any load."""
    with (
        FitThreads(work=work, current_s=STALE_S, pools=False) as threads,
        ThreadPoolExecutor(threads.most, thread_name_prefix="sklearn_adm") as pool,
    ):

        def run(kernel, count, room, *args, interleave=False, grain=1):
            if count == 0:
                return
            most = CHUNKS_PER_THREAD * threads.most if threads.most > 1 else 1
            chunks = min(-(-count // grain), most)
            length = -(-count // chunks)
            spans = (
                ((first, count, chunks) for first in range(chunks))
                if interleave
                else ((start, min(start + length, count), 1) for start in range(0, count, length))
            )
            lock = threading.Lock()

            def next_chunk():
                with lock:
                    return next(spans, None)

            def helper(rank):  # stops where the load leaves fewer threads than its rank
                space = None  # made at its first chunk
                while rank < threads.n_threads and (span := next_chunk()) is not None:
                    space = room() if space is None else space
                    kernel(*args, *space, *span)

            helpers, started, space = {}, [], room()
            while True:
                for rank in range(1, threads.n_threads):
                    if rank not in helpers or helpers[rank].done():
                        helpers[rank] = pool.submit(helper, rank)
                        started.append(helpers[rank])
                span = next_chunk()
                if span is None:
                    break
                kernel(*args, *space, *span)
                threads.rebalance()
            for future in started:
                future.result()

        yield run


def squared_correlation(covariance, variance_x, variance_y):
    """dCor^2 = dCov^2 / sqrt(dVar_x^2 dVar_y^2), 0 where a variance is 0 (a constant)."""
    denominator = np.sqrt(np.maximum(variance_x, 0.0) * np.maximum(variance_y, 0.0))
    positive = denominator > 0
    return np.where(
        positive, np.maximum(covariance, 0.0) / np.where(positive, denominator, 1.0), 0.0
    )
