"""What the exact distance engines share (a leaf: it imports none of them): the choice of a
numba kernel and its threads, and the ratio that turns distance covariances into a
correlation."""

import contextlib

import numba
import numpy as np

from .._runtime.threads import FitThreads

#: pairs of rows times features, over all the calls that share a kernel, below which the
#: serial kernel runs: it compiles several times faster than the parallel one (a first call in
#: a fresh environment) and runs such work in a fraction of a second
SERIAL_WORK = 2**27


@contextlib.contextmanager
def numba_kernel(work, serial, parallel, calls=1):
    """The kernel to call ``calls`` times on ``work`` elements each, on the threads a fit
    would use (:class:`~sklearn_adm._runtime.threads.FitThreads`), leaving torch's and numba's
    counts as they were: numba's OpenMP pool shares torch's OpenMP runtime, and starting it
    sets the count to every core (in a Dask worker of one thread, the next fits would run
    two threads per core). Small work in all, or one thread, gets the ``serial``
    kernel."""
    if work * calls < SERIAL_WORK:  # nothing to share out: no threads to choose
        yield serial
        return
    with FitThreads(work=work, follows=False) as threads:
        if threads.n_threads == 1:
            yield serial
            return
        caller = numba.get_num_threads()
        numba.set_num_threads(min(threads.n_threads, numba.config.NUMBA_NUM_THREADS))
        try:
            yield parallel
        finally:
            numba.set_num_threads(caller)


def squared_correlation(covariance, variance_x, variance_y):
    """dCor^2 = dCov^2 / sqrt(dVar_x^2 dVar_y^2), 0 where a variance is 0 (a constant)."""
    denominator = np.sqrt(np.maximum(variance_x, 0.0) * np.maximum(variance_y, 0.0))
    positive = denominator > 0
    return np.where(
        positive, np.maximum(covariance, 0.0) / np.where(positive, denominator, 1.0), 0.0
    )
