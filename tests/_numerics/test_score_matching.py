"""The fitted scores and the quasi-maximum-likelihood turns that end ICA's start."""

import math

import numpy as np
import pytest
import torch

from sklearn_adm._numerics.score_matching import likelihood_rotation, score_fit, score_values

pytestmark = pytest.mark.numerics


def _mixture(n, rng):
    """Two Gaussians of standard deviation 0.3 at -0.9 and 0.9 (bimodal, near unit variance)."""
    return rng.choice([-0.9, 0.9], size=n) + 0.3 * rng.normal(size=n)


def test_fitted_scores_follow_the_true_scores_in_the_bulk():
    rng = np.random.default_rng(0)
    n = 20_000
    columns = np.c_[rng.normal(size=n), _mixture(n, rng), rng.laplace(scale=2**-0.5, size=n)]
    coefficients, information = score_fit(torch.as_tensor(columns))
    score = score_values(torch.as_tensor(columns), coefficients)
    score, information = score.numpy(), information.numpy()
    x = columns[:, 1]
    near, far = np.exp(-((x - 0.9) ** 2) / 0.18), np.exp(-((x + 0.9) ** 2) / 0.18)
    true = [
        columns[:, 0],  # Gaussian: psi(s) = s
        (x - 0.9 * (near - far) / (near + far)) / 0.09,
        2**0.5 * np.sign(columns[:, 2]),  # Laplace: a step at its cusp
    ]
    bulk = np.abs(columns) < 2
    for j, expected in enumerate(true):
        inside = bulk[:, j] & (np.abs(columns[:, j]) > 0.2)  # away from the Laplace cusp
        error = np.sqrt(np.mean((score[inside, j] - expected[inside]) ** 2))
        assert error < 0.15 * np.sqrt(np.mean(expected[inside] ** 2)), j
    # E[psi'] is the Fisher information: 1 for a Gaussian, more for any other density
    assert abs(information[0] - 1) < 0.05
    assert (information[1:] > 1.5).all()


def _rotated_sources(kind, n=4000, d=3):
    """White sources of one ``kind``, a random rotation of them, and a start 0.15 rad from
    the un-mixing rotation in every plane (one step alone stops at the angle limit)."""
    rng = np.random.default_rng(1)
    if kind == "uniform":
        sources = rng.uniform(-math.sqrt(3), math.sqrt(3), size=(n, d))
    elif kind == "bimodal":
        sources = np.column_stack([_mixture(n, rng) for _ in range(d)])
        sources = (sources - sources.mean(0)) / sources.std(0)
    else:
        sources = rng.normal(size=(n, d))
    rotation = np.linalg.qr(rng.normal(size=(d, d)))[0]
    skew = np.triu(np.full((d, d), 0.15), 1)
    start = rotation.T @ torch.linalg.matrix_exp(torch.as_tensor(skew - skew.T)).numpy()
    return torch.as_tensor(sources @ rotation), rotation, torch.as_tensor(start)


@pytest.mark.parametrize("kind", ["uniform", "bimodal"])
def test_likelihood_rotation_finds_the_sources_from_a_nearby_start(kind):
    Y, rotation, start = _rotated_sources(kind)
    found = likelihood_rotation(Y, start, steps=5).numpy()
    np.testing.assert_allclose(found.T @ found, np.eye(3), atol=1e-12)  # still a rotation
    # rotation @ found is the identity when the sources are found: its off-diagonal entries
    # are the angles left (0.16 at the start, 0.05 after one step and 0.010 after five for
    # the uniform sources, measured; the pull towards the start keeps a little of it)
    product = rotation @ found
    assert np.abs(product - np.diag(np.diag(product))).max() < 0.015


def test_likelihood_rotation_stays_near_the_start_of_gaussian_sources():
    """Every rotation of white Gaussian sources is as likely: the fitted scores' noise
    alone would turn them, and the pull towards the start keeps them (measured: 0.012)."""
    Y, _, start = _rotated_sources("gaussian")
    found = likelihood_rotation(Y, start, steps=5)
    assert (found - start).abs().max() < 0.03
