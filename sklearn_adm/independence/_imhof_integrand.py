"""Imhof's (1961) integrand for the tail of a weighted sum of chi-square variables, compiled
as a C callback that QUADPACK calls without Python: ``weighted_chi2_sf`` integrates it some
hundreds of times a test. A module of its own: a C callback is compiled when it is defined,
so it is imported at its first use, not with the package."""

import ctypes

import numba
import numpy as np
from scipy import LowLevelCallable

#: the forms of :func:`_imhof_integrand`: Imhof's integrand ``sin(theta(u)) / (u rho(u))``,
#: and the amplitudes of its Fourier tail ``sin(phase(u)) / (u rho(u))`` and ``cos(...)``
WHOLE, SINE, COSINE = 0.0, 1.0, 2.0


class Integrand:
    """:func:`_imhof_integrand` in one ``form`` at ``x`` and ``weights``, as a
    :class:`scipy.LowLevelCallable` that QUADPACK calls without Python (``function``); the
    object keeps the data it points to."""

    def __init__(self, x, weights, form):
        self.data = np.r_[x, form, len(weights), weights].astype(np.float64)
        self.function = LowLevelCallable(
            _imhof_integrand.ctypes, self.data.ctypes.data_as(ctypes.c_void_p)
        )


@numba.cfunc(numba.types.double(numba.types.double, numba.types.voidptr), cache=True)
def _imhof_integrand(u, data):
    """At ``u``, from ``data = [x, form, count, weights...]``: with ``phase(u) = sum_j
    arctan(w_j u) / 2`` and ``rho(u) = prod_j (1 + (w_j u)^2)^(1/4)`` (Imhof 1961, eq. 3.2),
    ``sin(phase(u) - x u / 2) / (u rho(u))`` (form 0), or ``sin(phase(u))`` (1) or
    ``cos(phase(u))`` (2) over ``u rho(u)``."""
    head = numba.carray(data, 3, dtype=np.float64)
    x, form, count = head[0], head[1], int(head[2])
    weights = numba.carray(data, 3 + count, dtype=np.float64)[3:]
    phase, log_rho = 0.0, 0.0
    for weight in weights:
        product = weight * u
        phase += np.arctan(product)
        log_rho += np.log1p(product * product)
    phase *= 0.5
    envelope = np.exp(-0.25 * log_rho) / u
    if form == WHOLE:
        return np.sin(phase - 0.5 * x * u) * envelope
    if form == SINE:
        return np.sin(phase) * envelope
    return np.cos(phase) * envelope
