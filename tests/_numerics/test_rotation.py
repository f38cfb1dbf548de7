"""The Stiefel helpers behind PICA (polar retraction, negentropy rotation, the optimizer) and
ICA's rotation encoders."""

import numpy as np
import pytest
import torch

from sklearn_adm._numerics import functional
from sklearn_adm._numerics.rotation import (
    _fixed_point,
    negentropy,
    negentropy_rotation,
    negentropy_step,
    polar,
)
from sklearn_adm.datasets import make_embedding_like
from sklearn_adm.decomposition._ica_start import _RotationEncoders
from sklearn_adm.nn._optim import NormalisedMomentum

pytestmark = pytest.mark.numerics


def test_polar_is_the_nearest_orthonormal_frame():
    torch.manual_seed(0)
    W = torch.randn(2, 6, 3, dtype=torch.float64)
    Q = polar(W)
    np.testing.assert_allclose(
        Q.transpose(-1, -2) @ Q, np.broadcast_to(np.eye(3), (2, 3, 3)), atol=1e-12
    )
    # W = Q S with S symmetric positive definite (the polar decomposition)
    S = Q.transpose(-1, -2) @ W
    np.testing.assert_allclose(S, S.transpose(-1, -2), atol=1e-12)
    assert torch.linalg.eigvalsh(S).min() > 0


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_negentropy_reads_log_cosh(dtype):
    """The contrast's log cosh, by exp and log or by softplus, is numpy's log(cosh(u)) minus
    the Gaussian's 0.3745672075, without overflow where cosh overflows."""
    u = np.r_[np.linspace(-30.0, 30.0, 6001), -500.0, 500.0]
    with np.errstate(over="ignore"):
        log_cosh = np.where(np.abs(u) < 300, np.log(np.cosh(u)), np.abs(u) - np.log(2.0))
    expected = abs(log_cosh.mean() - 0.3745672075)
    Y = torch.as_tensor(u, dtype=dtype)[None, :, None]
    value = negentropy(Y, torch.ones(1, 1, 1, dtype=dtype)).item()
    assert value == pytest.approx(expected, rel=1e-6 if dtype == torch.float32 else 1e-12)


def test_the_rotations_tanh_is_tanh():
    x = torch.linspace(-20, 20, 4001, dtype=torch.float64)
    np.testing.assert_allclose(functional.tanh_no_grad(x), torch.tanh(x), atol=1e-15)
    x32 = torch.randn(10_000)
    assert (functional.tanh_no_grad(x32) - torch.tanh(x32)).abs().max() < 5e-7


def test_negentropy_rotation_unmixes_rotated_uniform_sources():
    """FastICA's fixed point on white data: recovers a rotation of two uniform sources."""
    rng = np.random.default_rng(0)
    sources = rng.uniform(-np.sqrt(3), np.sqrt(3), size=(5000, 2))
    angle = 0.6
    mixing = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    Y = torch.as_tensor(sources @ mixing.T)[None]
    R = negentropy_rotation(Y, torch.eye(2, dtype=torch.float64)[None])[0]
    recovered = (Y[0] @ R).numpy()
    correlation = np.abs(np.corrcoef(recovered.T, sources.T)[:2, 2:])
    assert correlation.max(axis=1).min() > 0.999


def test_normalised_momentum_commutes_with_rotations():
    """One scale per tensor: rotating the gradient rotates the step (Adam's does not)."""
    torch.manual_seed(0)
    gradient = torch.randn(5, 3)
    Q = torch.linalg.qr(torch.randn(3, 3))[0]

    def first_step(grad):
        p = torch.nn.Parameter(torch.zeros(5, 3))
        optimizer = NormalisedMomentum([p], lr=0.1)
        p.grad = grad
        optimizer.step()
        return p.detach()

    np.testing.assert_allclose(first_step(gradient @ Q), first_step(gradient) @ Q, atol=1e-6)
    # each column turns by about lr: the mean squared column norm of the step is lr^2
    np.testing.assert_allclose(first_step(gradient).square().sum(dim=0).mean(), 0.01, rtol=1e-5)


def _whitened_embedding_scores(d):
    X, _ = make_embedding_like(4000, 128, random_state=0)
    U = np.linalg.svd(X - X.mean(axis=0), full_matrices=False)[0]
    return torch.as_tensor(U[:, :d] * np.sqrt(len(X)))[None]


def test_negentropy_step_only_ascends_and_beats_the_fixed_point():
    """On clustered, heavy-tailed scores every step raises the contrast (the plain fixed
    point need not), and the steps end above the fixed point's own limit."""
    Y = _whitened_embedding_scores(16)
    start = polar(
        torch.randn(1, 16, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    )
    R, angle, values = start, torch.tensor([0.5], dtype=torch.float64), []
    for _ in range(60):
        R, angle = negentropy_step(Y, R, angle)
        values.append(negentropy(Y, R).item())
    assert np.all(np.diff(values) >= 0)
    np.testing.assert_allclose(R[0].T @ R[0], np.eye(16), atol=1e-10)
    fixed = start
    for _ in range(60):
        fixed = _fixed_point(Y, Y @ fixed, fixed)
    # at least the fixed point's limit (here both end at the same maximum, to rounding)
    assert values[-1] >= negentropy(Y, fixed).item() - 1e-12


def test_exploration_reaches_higher_contrast_on_digits():
    """The contrast's maxima are FastICA's fixed points; from random rotations the ascent
    alone settles in poorer ones, plain fixed-point steps first reach higher ones, at least
    the one scikit-learn's FastICA reaches (which version changes: 0.418 with 1.9.1)."""
    from sklearn.datasets import load_digits
    from sklearn.decomposition import PCA, FastICA

    X = load_digits().data
    Y = torch.as_tensor(PCA(16, whiten=True).fit_transform(X))
    sources = FastICA(16, whiten="unit-variance", max_iter=1000, random_state=0).fit_transform(X)
    sources = torch.as_tensor(sources / sources.std(axis=0))
    fastica = negentropy(sources[None], torch.eye(16, dtype=torch.float64)[None]).item()
    starts = polar(
        torch.randn(4, 16, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    )
    Ys = Y[None].expand(4, -1, -1)
    ascent = negentropy(Ys, negentropy_rotation(Ys, starts, max_iter=300))
    explored = negentropy(Ys, negentropy_rotation(Ys, starts, explore=200, max_iter=300))
    assert explored.max() > ascent.max() + 0.01
    assert explored.max() > fastica - 1e-3


def _settled_rotation(Y):
    start = polar(torch.randn(1, Y.shape[-1], Y.shape[-1], dtype=Y.dtype))
    return negentropy_rotation(Y, start, explore=200, max_iter=200, tol=1e-12)


def test_a_settled_rotation_takes_no_line_search(monkeypatch):
    """At a fixed point of FastICA's iteration there is no ascent direction: the step keeps
    the rotation after reading the contrast at it and at its fixed point, without trying
    any angle (it used to try ten)."""
    from sklearn_adm._numerics import rotation

    torch.manual_seed(0)
    sources = torch.rand(4000, 3, dtype=torch.float64) * 2 - 1
    Y = (sources @ polar(torch.randn(3, 3, dtype=torch.float64)))[None] * 3**0.5
    R = _settled_rotation(Y)
    calls = []
    counted = rotation.negentropy
    monkeypatch.setattr(rotation, "negentropy", lambda *a: calls.append(1) or counted(*a))
    new, angle = negentropy_step(Y, R, torch.tensor([0.5], dtype=torch.float64))
    assert len(calls) == 1  # the fixed point's contrast; the current one is read directly
    np.testing.assert_allclose(new, R, atol=1e-6)
    assert angle.item() == 0.5


def test_exploration_stops_once_every_start_sits_at_a_fixed_point(monkeypatch):
    from sklearn_adm._numerics import rotation

    torch.manual_seed(0)
    sources = torch.rand(4000, 3, dtype=torch.float64) * 2 - 1
    Y = (sources @ polar(torch.randn(3, 3, dtype=torch.float64)))[None] * 3**0.5
    steps = []
    counted = rotation._fixed_point
    monkeypatch.setattr(rotation, "_fixed_point", lambda *a: steps.append(1) or counted(*a))
    R = negentropy_rotation(Y, polar(torch.randn(1, 3, 3, dtype=torch.float64)), explore=200)
    explored = len(steps)
    assert explored < 50  # FastICA converges on uniform sources in a few steps
    estimated = (Y @ R)[0]
    correlation = np.corrcoef(np.c_[sources.numpy(), estimated.numpy()].T)[:3, 3:]
    assert (np.abs(correlation).max(axis=1) > 0.99).all()


def test_ica_encoder_differentiates_its_rotations_as_the_exponential_does():
    """Between updates the generator is 0, where ``I + G`` stands in for ``expm(G)``: the
    same codes and the same gradient of any loss with respect to the generator."""
    generator = torch.Generator().manual_seed(0)
    start = polar(torch.randn(5, 5, generator=generator, dtype=torch.float64))
    encoders = _RotationEncoders(torch.eye(5, dtype=torch.float64), start, n_init=2)
    x = torch.randn(50, 5, generator=generator, dtype=torch.float64)
    weights = torch.randn(50, 10, generator=generator, dtype=torch.float64)

    codes = encoders.encode(x)
    (gradient,) = torch.autograd.grad((weights * codes.tanh()).sum(), encoders.skew)
    exact = torch.einsum("nk,rkd->nrd", x, encoders.rotations()).flatten(start_dim=1)
    (exact_gradient,) = torch.autograd.grad((weights * exact.tanh()).sum(), encoders.skew)
    torch.testing.assert_close(codes, exact, rtol=0, atol=1e-15)
    torch.testing.assert_close(gradient, exact_gradient, rtol=1e-12, atol=1e-12)
    assert gradient.abs().max() > 0.1  # a real gradient, not two zeros
