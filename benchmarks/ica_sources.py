"""The 18 source densities of Bach & Jordan (2002), "Kernel Independent Component Analysis",
Table 3 / Figure 4, labelled (a)-(r), each standardised to zero mean and unit variance.

The families follow the paper: Student t (3 and 5 degrees of freedom), double exponential,
uniform, exponential, a mixture of two double exponentials, and symmetric and nonsymmetric
mixtures of two and of four Gaussians, each multimodal, transitional and unimodal. The
mixtures' weights, means and standard deviations are those of Bach's ``usr_distrib.m`` as
ported in CRAN ``ica``'s ``icasamp``.
"""

import numpy as np

LETTERS = "abcdefghijklmnopqr"

#: (weights, means, standard deviations) of the Gaussian mixtures
_MIXTURES = {
    "g": ([1, 1], [-0.5, 0.5], [0.15, 0.15]),
    "h": ([1, 1], [-0.5, 0.5], [0.4, 0.4]),
    "i": ([1, 1], [-0.5, 0.5], [0.5, 0.5]),
    "j": ([1, 3], [-0.5, 0.5], [0.15, 0.15]),
    "k": ([1, 2], [-0.7, 0.5], [0.4, 0.4]),
    "l": ([1, 2], [-0.7, 0.5], [0.5, 0.5]),
    "m": ([1, 2, 2, 1], [-1, -0.33, 0.33, 1], [0.16, 0.16, 0.16, 0.16]),
    "n": ([1, 2, 2, 1], [-1, -0.2, 0.2, 1], [0.2, 0.3, 0.3, 0.2]),
    "o": ([1, 2, 2, 1], [-0.7, -0.2, 0.2, 0.7], [0.2, 0.3, 0.3, 0.2]),
    "p": ([1, 1, 2, 1], [-1, 0.3, -0.3, 1.1], [0.2, 0.2, 0.2, 0.2]),
    "q": ([1, 3, 2, 0.5], [-1, -0.2, 0.3, 1], [0.2, 0.3, 0.2, 0.2]),
    "r": ([1, 2, 2, 1], [-0.8, -0.2, 0.2, 0.5], [0.22, 0.3, 0.3, 0.2]),
}


def sample(letter, n, rng):
    """``n`` draws of density ``letter``, standardised."""
    if letter in _MIXTURES:
        weights, means, sds = (np.asarray(v, dtype=float) for v in _MIXTURES[letter])
        k = rng.choice(len(weights), size=n, p=weights / weights.sum())
        s = rng.normal(means[k], sds[k])
    elif letter == "f":  # two double exponentials, at -1 and 1, each of variance 0.25
        s = rng.choice([-1.0, 1.0], size=n) + rng.laplace(0, 0.5 / np.sqrt(2), n)
    else:
        s = {
            "a": lambda: rng.standard_t(3, n),
            "b": lambda: rng.laplace(size=n),
            "c": lambda: rng.uniform(-1, 1, n),
            "d": lambda: rng.standard_t(5, n),
            "e": lambda: rng.exponential(size=n),
        }[letter]()
    return (s - s.mean()) / s.std()


def amari_error(unmixing, mixing):
    """Bach & Jordan's Amari error of ``unmixing @ mixing`` times 100, in [0, 100]: 0 when it
    is a scaled permutation."""
    P = np.abs(unmixing @ mixing)
    m = len(P)
    rows = (P.sum(axis=1) / P.max(axis=1) - 1).sum()
    cols = (P.sum(axis=0) / P.max(axis=0) - 1).sum()
    return 100 * (rows + cols) / (2 * m * (m - 1))
