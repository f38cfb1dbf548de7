"""PICA reproduces the paper's PCA-vs-PICA example and behaves like sklearn's PCA."""

import warnings

import dcor
import numpy as np
import pytest
from sklearn.datasets import load_digits, load_wine
from sklearn.decomposition import PCA, FastICA
from sklearn.exceptions import ConvergenceWarning

from sklearn_adm import PICA, DependenceScorer
from sklearn_adm._runtime.device import resolve_device
from sklearn_adm.datasets import make_embedding_like, make_pca_vs_pica

pytestmark = pytest.mark.numerics


def fresh_dcor(model, seed):
    X_test, _ = make_pca_vs_pica(20_000, random_state=1000 + seed)
    Z = model.transform(X_test)
    error = np.mean(np.sum((X_test - model.inverse_transform(Z)) ** 2, axis=1))
    return dcor.distance_correlation(Z[:, 0], Z[:, 1], method="avl"), error


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_paper_example_with_default_settings(seed):
    """Example 1: PICA keeps x1 and x3, independent, losing x2's variance (4.5)."""
    X, _ = make_pca_vs_pica(10_000, random_state=seed)
    pica = PICA(n_components=2, random_state=seed).fit(X)
    directions = pica.components_ / np.linalg.norm(pica.components_, axis=1, keepdims=True)
    assert abs(directions[0, 0]) >= 0.98  # e1: the variance-25 factor 5 v1
    assert abs(directions[1, 2]) >= 0.98  # e3: the other factor v2
    dependence, error = fresh_dcor(pica, seed)
    assert dependence <= 0.03  # paper: 0.008; independent data reads ~0.01 at this size
    assert error == pytest.approx(4.5, abs=0.25)  # the variance of x2, which PICA drops
    assert pica.history_[-1]["val_critic_mse"] > 0.95  # Corollary 1: the critic reads 1


def test_paper_example_where_every_random_start_mixed_x3_into_x1():
    """Data and seed 8 of the docstring's example: with random starts only, all four starts
    ended tilting ``x1``'s component towards ``x3`` and kept ``x2``; the swap start does not."""
    rng = np.random.default_rng(8)
    v = rng.uniform(-np.sqrt(3), np.sqrt(3), size=(5000, 2))
    X = np.c_[5 * v[:, 0], 3 * np.cos(2 * np.pi * v[:, 0] / np.sqrt(3)), v[:, 1]]
    pica = PICA(n_components=2, random_state=8).fit(X)
    directions = pica.components_ / np.linalg.norm(pica.components_, axis=1, keepdims=True)
    assert abs(directions[0, 0]) >= 0.98 and abs(directions[1, 2]) >= 0.98


def test_starts_keep_the_leading_directions_and_start_1_swaps_across_the_cut():
    import torch

    from sklearn_adm.decomposition import _pica_encoders

    torch.manual_seed(0)
    frame = _pica_encoders._SubspaceAutoencoders._starts(
        keep=12, d=8, n_init=4, dtype=torch.float64
    )
    np.testing.assert_array_equal(frame[0], torch.eye(12, 8))  # PCA's subspace
    swapped = torch.zeros(12, 8, dtype=torch.float64)
    swapped[:6, :6] = torch.eye(6)
    swapped[8:10, 6:] = torch.eye(2)  # directions 7 and 8 swapped for 9 and 10
    np.testing.assert_array_equal(frame[1], swapped)
    for start, replaced in [(2, 4), (3, 6)]:  # ceil(8 r / 4) random ones around the cut
        kept = 8 - replaced
        np.testing.assert_array_equal(frame[start][:, :kept], torch.eye(12, kept))
        np.testing.assert_allclose(frame[start].T @ frame[start], torch.eye(8), atol=1e-12)
        assert frame[start][:kept, kept:].abs().max() == 0
        assert frame[start][kept:, kept:].abs().min() > 0  # dense: a random mix


def test_pca_keeps_the_dependent_pair_on_the_same_example():
    """The reference point of the example: PCA keeps x1, x2 with dCor about 0.25."""
    X, _ = make_pca_vs_pica(10_000, random_state=0)
    dependence, error = fresh_dcor(PCA(n_components=2).fit(X), 0)
    assert dependence > 0.2
    assert error == pytest.approx(1.0, abs=0.1)


def test_units_do_not_matter():
    X, _ = make_pca_vs_pica(2_000, random_state=0)
    params = dict(n_components=2, random_state=0, max_iter=60)
    with pytest.warns(ConvergenceWarning):
        small = PICA(**params).fit(X)
    with pytest.warns(ConvergenceWarning):
        large = PICA(**params).fit(1000 * X)
    np.testing.assert_allclose(large.components_, small.components_, atol=1e-4)
    np.testing.assert_allclose(
        large.transform(1000 * X), 1000 * small.transform(X), rtol=1e-3, atol=1e-2
    )


def test_without_dependence_term_it_is_pca():
    """dependence_weight=0 turns ADM off: the plain linear autoencoder's optimum, PCA."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 5)) * [3.0, 2.0, 1.5, 1.0, 0.5]
    # all rows for training, as PCA uses them (the weights are float32: compare to 1e-4)
    pica = PICA(3, dependence_weight=0, validation_fraction=0, random_state=0, max_iter=20)
    with pytest.warns(ConvergenceWarning):
        Z = pica.fit_transform(X)
    pca = PCA(n_components=3).fit(X)
    np.testing.assert_allclose(np.abs(Z), np.abs(pca.transform(X)), atol=1e-4 * np.abs(Z).max())
    np.testing.assert_allclose(pica.explained_variance_, pca.explained_variance_, rtol=1e-4)


def test_a_game_that_does_not_move_stops_after_half_the_window():
    """Without the dependence term PCA's subspace is the optimum and the frame never moves:
    the change over the last half of the window (60 updates) reads 0 at update 70, and the
    game stops there instead of waiting for the whole window at update 130."""
    X, _ = make_pca_vs_pica(2_000, random_state=0)
    pica = PICA(2, dependence_weight=0, random_state=0).fit(X)
    assert pica.n_iter_ == 70
    last = pica.history_[-1]
    assert last["val_change"] == np.inf and last["val_change_half"] == 0.0


def test_reaches_a_non_orthogonal_basis_of_independent_sources():
    """A tied autoencoder only rotates PCA's scores orthogonally; sources mixed by a
    non-orthogonal matrix need the untied decoder. PICA recovers them, as FastICA does."""
    rng = np.random.default_rng(0)
    sources = rng.uniform(-np.sqrt(3), np.sqrt(3), size=(4000, 2))
    mixing = np.array([[2.0, 1.0], [0.5, 1.5], [0.0, 0.0]])
    X = sources @ mixing.T + 0.05 * rng.normal(size=(4000, 3))
    Z = PICA(n_components=2, random_state=0).fit_transform(X)
    correlation = np.abs(np.corrcoef(Z.T, sources.T)[:2, 2:])
    assert np.sort(correlation.max(axis=1)).min() > 0.995
    assert correlation.max(axis=0).min() > 0.995  # each source found by one component


@pytest.mark.parametrize("n_components", [None, 3])
def test_as_many_components_as_directions_is_ica_without_a_game(monkeypatch, n_components):
    """With as many components as directions of variance (all features, or the rank of
    rank-deficient data) there is no subspace to choose: the components are the rotation of
    highest contrast, solved once, and no critic is trained (a fit of all 384 components of
    the docstrings took 27 s this way; the game took 176 s before its first update)."""
    from sklearn_adm.game import _loop

    monkeypatch.setattr(_loop.AdversarialGame, "play", None)  # a game would fail
    rng = np.random.default_rng(0)
    sources = np.c_[rng.laplace(size=3000), rng.uniform(-1, 1, 3000), rng.exponential(size=3000)]
    mixing = rng.normal(size=(4, 3)) if n_components else rng.normal(size=(3, 3))
    X = sources @ mixing.T
    pica = PICA(n_components, random_state=0).fit(X)
    correlation = np.abs(np.corrcoef(pica.transform(X).T, sources.T)[:3, 3:])
    assert np.sort(correlation.max(axis=1)).min() > 0.99
    assert correlation.max(axis=0).min() > 0.99  # each source found by one component
    assert pica.n_iter_ == 1 and pica.history_ == []
    assert pica.explained_variance_ratio_.sum() == pytest.approx(1.0, abs=1e-6)
    np.testing.assert_allclose(pica.inverse_transform(pica.transform(X)), X, atol=1e-6)


def test_embedding_like_data_judged_by_trees_on_fresh_rows():
    """On clustered, heavy-tailed, unit-norm rows the game converges with the defaults, and
    gradient-boosted trees (not the critic it trained against) find far less dependence
    among PICA's components than among PCA's or FastICA's, on rows it never saw."""
    rows, _ = make_embedding_like(3000, 32, n_clusters=8, random_state=0)
    X, X_new = rows[:1500], rows[1500:]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        pica = PICA(4, random_state=0).fit(X)
    judge = DependenceScorer("hgb", max_samples=None, random_state=0)
    peers = [PCA(4).fit(X), FastICA(4, whiten="unit-variance", random_state=0).fit(X)]
    peer_dependence = min(judge.score(peer.transform(X_new)) for peer in peers)
    assert judge.score(pica.transform(X_new)) < 0.5 * peer_dependence
    pca_variance = peers[0].explained_variance_ratio_.sum()
    assert pica.explained_variance_ratio_.sum() > 0.8 * pca_variance


def test_float32_embeddings_give_the_float64_model():
    """Sentence embeddings arrive in float32: passed as they are or converted to float64,
    they give the same model (the statistics are taken in float64, the game plays in
    float32 either way), and the output keeps the input's dtype. The statistics agree to
    float32's rounding; 40 updates of the game carry such a difference on to about 1e-3 on
    some CPUs' kernels (MKL_CBWR=COMPATIBLE)."""
    X, _ = make_embedding_like(600, 24, n_clusters=4, random_state=0)
    X = X.astype(np.float32)
    models = {}
    for dtype in (np.float32, np.float64):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            models[dtype] = PICA(4, max_iter=40, random_state=0).fit(X.astype(dtype))
        assert models[dtype].components_.dtype == dtype
        assert models[dtype].transform(X.astype(dtype)).dtype == dtype
    np.testing.assert_allclose(models[np.float32].mean_, models[np.float64].mean_, atol=1e-6)
    np.testing.assert_allclose(
        models[np.float32].transform(X), models[np.float64].transform(X), atol=1e-2
    )


def test_without_dependence_term_it_finds_pca_subspace():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 4)) * [3.0, 2.0, 1.0, 0.5] @ np.linalg.qr(rng.normal(size=(4, 4)))[0]
    pica = PICA(n_components=2, dependence_weight=0, random_state=0).fit(X)
    pca = PCA(n_components=2).fit(X)
    basis = np.linalg.qr(pica.components_.T)[0]
    cosines = np.linalg.svd(basis.T @ pca.components_.T, compute_uv=False)
    assert cosines.min() > 0.999  # principal angles between the two subspaces near 0
    # Within the subspace a plain autoencoder may rotate freely; the variance kept is PCA's.
    np.testing.assert_allclose(
        pica.explained_variance_.sum(), pca.explained_variance_.sum(), rtol=0.01
    )


@pytest.fixture(scope="module")
def fitted():
    X, _ = make_pca_vs_pica(1_000, random_state=0)
    return PICA(n_components=2, random_state=0, max_iter=30).fit(X), X


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_fitted_attributes_follow_pca_conventions(fitted):
    pica, X = fitted
    Z = pica.transform(X)
    np.testing.assert_allclose(Z, (X - pica.mean_) @ pica.components_.T)
    np.testing.assert_allclose(pica.inverse_transform(Z), Z @ pica.mixing_.T + pica.mean_)
    np.testing.assert_allclose(np.linalg.norm(pica.mixing_, axis=0), 1.0)
    # The decoder is the least-squares one: the residual is orthogonal to every component.
    residual = X - pica.inverse_transform(Z)
    np.testing.assert_allclose(Z.T @ residual, 0.0, atol=1e-6 * np.abs(Z).max() * len(X))
    # Components are uncorrelated (exactly on the training rows, nearly on the held-out ones),
    # so their variances add up to the variance reconstructed.
    reconstructed = 1 - np.sum(residual**2) / np.sum((X - X.mean(axis=0)) ** 2)
    np.testing.assert_allclose(pica.explained_variance_ratio_.sum(), reconstructed, rtol=1e-3)
    np.testing.assert_allclose(pica.mean_, X.mean(axis=0))
    np.testing.assert_allclose(pica.explained_variance_, Z.var(axis=0, ddof=1), rtol=1e-10)
    assert np.all(np.diff(pica.explained_variance_) <= 0)
    np.testing.assert_allclose(
        pica.explained_variance_ratio_, Z.var(axis=0, ddof=1) / X.var(axis=0, ddof=1).sum()
    )
    largest = np.abs(pica.components_).argmax(axis=1)
    assert np.all(pica.components_[np.arange(2), largest] > 0)
    assert pica.n_iter_ == 30 and len(pica.history_) == 30
    assert {"objective", "reconstruction", "critic_mse", "variance_penalty"} <= set(
        pica.history_[0]
    )
    assert pica.device_ == str(resolve_device("auto"))
    assert list(pica.get_feature_names_out()) == ["pica0", "pica1"]


@pytest.mark.usefixtures("short_warmup")
def test_max_iter_before_convergence_warns():
    X, _ = make_pca_vs_pica(500, random_state=0)
    with pytest.warns(ConvergenceWarning, match="max_iter=5 .*tol and n_iter_no_change"):
        PICA(n_components=2, max_iter=5, random_state=0).fit(X)


def test_progress_bar_with_verbose(capsys):
    X, _ = make_pca_vs_pica(500, random_state=0)
    with pytest.warns(ConvergenceWarning):
        PICA(n_components=2, max_iter=10, verbose=1, random_state=0).fit(X)
    assert "PICA" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"n_components": 0}, "'n_components' parameter of PICA"),
        ({"dependence_weight": -1}, "'dependence_weight' parameter"),
        ({"validation_fraction": 1.0}, "'validation_fraction' parameter"),
        ({"batch_size": 0}, "'batch_size' parameter"),
        ({"learning_rate": "fast"}, "'learning_rate' parameter of PICA must be a str among"),
    ],
)
def test_bad_parameters(params, message):
    with pytest.raises(ValueError, match=message):
        PICA(max_iter=2, **params).fit(np.eye(3))


@pytest.mark.usefixtures("short_warmup")
@pytest.mark.parametrize(("weight", "step"), [(0.4, 0.0085), (1.0, 0.0085), (4.0, 0.017)])
def test_auto_learning_rate_grows_with_the_square_root_of_a_weight_above_one(weight, step):
    X, _ = make_pca_vs_pica(500, random_state=0)
    fit = dict(n_components=2, dependence_weight=weight, max_iter=10, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        auto = PICA(**fit).fit(X)
        explicit = PICA(learning_rate=step, **fit).fit(X)
        other = PICA(learning_rate=1.5 * step, **fit).fit(X)
    np.testing.assert_array_equal(auto.components_, explicit.components_)
    assert not np.allclose(auto.components_, other.components_)


@pytest.mark.parametrize(
    ("n_components", "weight", "step"),
    [(2, 0.4, 0.0085), (32, 0.4, 0.0085), (64, 0.4, 0.0085 * 2**0.5), (64, 4.0, 0.0085 * 8**0.5)],
)
def test_auto_learning_rate_grows_with_the_square_root_of_components_above_32(
    n_components, weight, step
):
    """FastICA removes a larger share of PCA's dependence in more dimensions; at 64
    components the step that suits 32 left the default at 0.8 x FastICA's dependence.
    A step the user sets is kept whatever the number of components."""
    pica = PICA(dependence_weight=weight)
    assert pica._encoder_learning_rate(n_components) == pytest.approx(step)
    assert PICA(learning_rate=0.003)._encoder_learning_rate(n_components) == 0.003


def test_divergence_is_detected_and_the_last_good_state_kept(monkeypatch):
    """A non-finite loss stops training with a warning naming a remedy; output stays finite."""
    from sklearn_adm.game import _loop

    calls = {"n": 0}
    original = _loop.AdversarialGame._encoder_step

    def poisoned(self, X_train):
        calls["n"] += 1
        loss, terms = original(self, X_train)
        return (loss * float("nan"), terms) if calls["n"] == 25 else (loss, terms)

    monkeypatch.setattr(_loop.AdversarialGame, "_encoder_step", poisoned)
    X, _ = make_pca_vs_pica(1_000, random_state=0)
    with pytest.warns(ConvergenceWarning, match="diverged at iteration 25.*Lower learning_rate"):
        pica = PICA(n_components=2, random_state=0, max_iter=50).fit(X)
    assert pica.n_iter_ == 25
    assert np.all(np.isfinite(pica.components_))
    assert np.all(np.isfinite(pica.transform(X)))


def test_critic_takes_its_warm_up_then_critic_steps_per_update(monkeypatch):
    """100 warm-up steps on the four starts, then critic_steps per update: for the 10 updates
    of all four starts, the 20 of the two leaders, then for the start that plays on."""
    from sklearn_adm.game import _loop

    steps = []
    original = _loop.AdversarialGame._train_critic

    def counted(self, X_train, count):
        steps.append((self.autoencoder.n_init, count))
        return original(self, X_train, count)

    monkeypatch.setattr(_loop.AdversarialGame, "_train_critic", counted)
    X, _ = make_pca_vs_pica(600, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        PICA(n_components=2, critic_steps=3, max_iter=40, random_state=0).fit(X)
    assert steps == [(4, 100)] + [(4, 3)] * 10 + [(2, 3)] * 20 + [(1, 3)] * 10


@pytest.mark.usefixtures("short_warmup")
def test_keyboard_interrupt_leaves_a_usable_model(monkeypatch):
    from sklearn_adm.game import _loop

    calls = {"n": 0}
    original = _loop.AdversarialGame._encoder_step

    def interrupted(self, X_train):
        calls["n"] += 1
        if calls["n"] == 15:
            raise KeyboardInterrupt
        return original(self, X_train)

    monkeypatch.setattr(_loop.AdversarialGame, "_encoder_step", interrupted)
    X, _ = make_pca_vs_pica(1_000, random_state=0)
    with pytest.warns(UserWarning, match="interrupted at iteration 15"):
        pica = PICA(n_components=2, random_state=0, max_iter=50).fit(X)
    assert pica.transform(X).shape == (1_000, 2)
    assert np.all(np.isfinite(pica.components_))


def test_codes_project_the_weights_only_when_no_update_left_them_orthonormal(monkeypatch):
    """After an update the frame and rotation are orthonormal and used as they are (no
    projection, which costs a host round trip on a GPU); weights loaded from elsewhere (the
    game's average) are projected first."""
    import torch

    from sklearn_adm._data.streaming import TensorRows
    from sklearn_adm._numerics.rotation import polar, retract
    from sklearn_adm.decomposition import _pica_encoders

    torch.manual_seed(0)
    X = torch.as_tensor(make_embedding_like(500, 12, random_state=0)[0])
    autoencoder = _pica_encoders._SubspaceAutoencoders(TensorRows(X), 3, 2, rotate=True)
    x = autoencoder.prepare(X)

    def projected_codes():
        weight = polar(autoencoder.frame.detach()) @ polar(autoencoder.rotation)
        return torch.einsum("nk,rkd->nrd", x, weight).flatten(start_dim=1)

    projections = []

    def counted(function):
        return lambda *args, **kwargs: projections.append(1) or function(*args, **kwargs)

    with torch.no_grad():
        autoencoder.frame.add_(0.05 * torch.randn_like(autoencoder.frame))
    autoencoder.after_update()
    frame = autoencoder.frame.detach()
    identity = torch.eye(3, dtype=frame.dtype).expand(2, 3, 3)
    torch.testing.assert_close(frame.transpose(-1, -2) @ frame, identity)
    monkeypatch.setattr(_pica_encoders, "polar", counted(polar))
    monkeypatch.setattr(_pica_encoders, "retract", counted(retract))
    with torch.no_grad():
        codes = autoencoder.encode(x)
    assert not projections
    torch.testing.assert_close(codes, projected_codes())

    state = {key: value.clone() for key, value in autoencoder.state_dict().items()}
    state["frame"] *= 1.02  # an average of nearby frames is nearly, not exactly, orthonormal
    state["rotation"] *= 0.98
    autoencoder.load_state_dict(state)
    with torch.no_grad():
        codes = autoencoder.encode(x)
        unprojected = torch.einsum("nk,rkd->nrd", x, state["frame"] @ state["rotation"])
    assert projections
    torch.testing.assert_close(codes, projected_codes())
    assert not torch.allclose(codes, unprojected.flatten(start_dim=1), atol=1e-3)


def test_frame_gradient_moves_the_subspace_only_and_is_preconditioned():
    """The gradient that reaches the frame ``V`` is ``(I - V V^T) G P``: no part of it lies in
    the span of ``V`` (turns inside the subspace are the rotation's), and ``P``, the inverse
    of the variance share of the frame's directions (plus a small ridge), scales it. ``G`` is
    the plain gradient of the same loss, through the codes and the reconstruction."""
    import torch

    from sklearn_adm._data.streaming import TensorRows
    from sklearn_adm.decomposition import _pica_encoders

    torch.manual_seed(0)
    X = torch.as_tensor(make_embedding_like(500, 12, random_state=0)[0])
    autoencoder = _pica_encoders._SubspaceAutoencoders(TensorRows(X), 3, 2, rotate=True)
    x = autoencoder.prepare(X)
    with torch.no_grad():
        autoencoder.frame.add_(0.05 * torch.randn_like(autoencoder.frame))
    autoencoder.after_update()
    weights = torch.randn(len(x), 6, dtype=x.dtype)
    codes = autoencoder.encode(x)
    loss = (weights * codes).sum() + autoencoder.reconstruction_error(x, codes).sum()
    loss.backward()

    frame = autoencoder.frame.detach().clone().requires_grad_()
    share = autoencoder.variance_share[:, None]
    plain_codes = torch.einsum("nk,rkd->nrd", x, frame @ autoencoder.rotation).flatten(1)
    kept = (frame.square() * share).sum(dim=(1, 2)) / autoencoder.pca_share
    (G,) = torch.autograd.grad((weights * plain_codes).sum() + (1 - kept).sum(), frame)
    V = frame.detach()
    gram = V.transpose(-1, -2) @ (share * V)
    scale = torch.diagonal(gram, dim1=-2, dim2=-1).mean(dim=-1)[:, None, None]
    P = torch.linalg.inv(gram / scale + 1e-3 * torch.eye(3, dtype=V.dtype))
    grad = autoencoder.frame.grad
    torch.testing.assert_close(grad, (G - V @ (V.transpose(-1, -2) @ G)) @ P)
    inside = V.transpose(-1, -2) @ (grad @ torch.linalg.inv(P))
    torch.testing.assert_close(inside, torch.zeros_like(inside))
    assert float((G - V @ (V.transpose(-1, -2) @ G)).abs().max()) > 0.1  # a real gradient

    autoencoder.keep_starts([1])  # the preconditioner follows the start that is kept
    torch.testing.assert_close(autoencoder.preconditioner, P[1:])


def test_components_are_uncorrelated_and_their_variances_add_up_to_what_is_reconstructed():
    """The game whitens on its training rows only; the fitted basis is made white on all the
    rows, so that, as PCA's, the components are uncorrelated there and
    ``explained_variance_ratio_`` sums to the share of variance the reconstruction explains
    (before: correlations up to 0.06, and a sum of 0.922 against 0.913 explained)."""
    rng = np.random.default_rng(0)
    X = rng.laplace(size=(200, 20)) @ rng.normal(size=(20, 20))
    with pytest.warns(ConvergenceWarning):
        pica = PICA(10, max_iter=30, random_state=0).fit(X)
    Z = pica.transform(X)
    np.testing.assert_allclose(np.corrcoef(Z.T), np.eye(10), atol=1e-8)
    np.testing.assert_allclose(pica.explained_variance_, Z.var(axis=0, ddof=1), rtol=1e-8)
    residual = X - pica.inverse_transform(Z)
    explained = 1 - (residual**2).sum() / ((X - X.mean(axis=0)) ** 2).sum()
    assert pica.explained_variance_ratio_.sum() == pytest.approx(explained, abs=1e-10)


@pytest.mark.parametrize(
    ("n_train", "horizon"), [(100, 25), (2_500, 25), (5_000, 50), (8_773, 87.73), (10**6, 100)]
)
def test_step_decays_over_passes_over_the_rows_up_to_four_times_the_updates(n_train, horizon):
    """A game of as many updates on 10,000 rows as on 2,500 stopped at 0.82 x FastICA's
    dependence where 3,000 of the same rows read 0.6 x: the horizon follows the rows."""
    assert PICA()._decay_horizon(n_train) == pytest.approx(horizon)


@pytest.mark.parametrize(("n_components", "rows"), [(2, 512), (16, 256), (32, 128)])
def test_critic_minibatches_shrink_beyond_eight_components(
    monkeypatch, short_warmup, n_components, rows
):
    """A critic step costs rows x features: beyond 8 components its minibatches hold
    4096 // n_components rows (at least 128); the encoder's keep batch_size."""
    from sklearn_adm.nn import _training

    sizes = []
    original = _training.CriticUpdates.__call__

    def counted(self, batch):
        sizes.append(len(batch))
        return original(self, batch)

    monkeypatch.setattr(_training.CriticUpdates, "__call__", counted)
    X, _ = make_embedding_like(1200, 48, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        PICA(n_components, max_iter=3, random_state=0).fit(X)
    assert set(sizes) == {rows}


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_likelihood_is_probabilistic_pca_with_the_basis_of_pica():
    """With PCA's subspace (no dependence term) the model is PCA's, and PICA's own subspace
    reads no better than PCA's, the largest a Gaussian model of this form reaches."""
    X = load_wine().data
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    pca = PCA(3).fit(X)
    plain = PICA(3, dependence_weight=0.0, random_state=0).fit(X)
    pica = PICA(3, random_state=0).fit(X)
    assert plain.score(X) == pytest.approx(pca.score(X), abs=0.01)  # measured 0.002 apart
    np.testing.assert_allclose(plain.get_covariance(), pca.get_covariance(), atol=0.05)
    assert pica.score(X) <= pca.score(X) + 1e-3
    np.testing.assert_allclose(pica.score(X), pica.score_samples(X).mean())
    assert pica.noise_variance_ == pytest.approx(pca.noise_variance_, rel=0.02)


@pytest.mark.parametrize("n_components", [0.5, 0.9, "mle"])
def test_n_components_as_pca_resolves_a_share_of_variance(n_components, short_warmup):
    X = load_digits().data[:600]
    expected = PCA(n_components, svd_solver="full").fit(X).n_components_
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        pica = PICA(n_components, max_iter=5, random_state=0).fit(X)
    assert pica.n_components_ == expected == pica.components_.shape[0]
