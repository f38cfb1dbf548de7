"""NonlinearPICA: independent components from nonlinearly mixed factors."""

import pickle

import dcor
import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning

from sklearn_adm import NonlinearPICA
from sklearn_adm._numerics.functional import _Tanh
from sklearn_adm.datasets import make_nonlinear_mixture
from sklearn_adm.decomposition._nonlinear import (
    _ACTIVATIONS,
    _BatchedMLP,
    _MLPAutoencoders,
    _SquaredError,
)

pytestmark = pytest.mark.numerics


def evaluate(model, seed):
    X, factors = make_nonlinear_mixture(10_000, random_state=100 + seed)
    Z = model.transform(X)
    r2 = 1 - ((X - model.inverse_transform(Z)) ** 2).sum() / ((X - X.mean(0)) ** 2).sum()
    between = dcor.distance_correlation(Z[:, 0], Z[:, 1], method="avl")
    follows = np.array(
        [
            [dcor.distance_correlation(Z[:, i], factors[:, j], method="avl") for j in range(2)]
            for i in range(2)
        ]
    )
    return r2, between, follows


def follows_the_factors(model, plain_leak):
    """Whether each component follows one factor (dCor above 0.9, below 0.2 with the other),
    mixing them less than the plain autoencoder's codes (``plain_leak``)."""
    _, _, follows = evaluate(model, 0)  # follows[i, j]: dCor of component i with factor j
    factor = follows.argmax(axis=1)  # the factor each component follows
    leak = follows[[0, 1], 1 - factor]  # dCor with the other factor
    return bool(
        sorted(factor) == [0, 1]
        and np.all(follows[[0, 1], factor] > 0.9)
        and np.all(leak < 0.2)
        and plain_leak > leak.max()
    )


@pytest.fixture(scope="module")
def adm_and_plain():
    """A plain autoencoder's fit (its codes read the same on every CPU dispatch measured),
    and ADM fits of eight starts (for the decoder contrast to choose from): seed 0, and
    seeds 1 and 2 only where seed 0 does not follow the factors. A nonlinear mixture has
    independent solutions that mix the factors (Darmois-type), which the contrast disfavours
    without a guarantee, so one seed may land there on another CPU's rounding
    (doc/design/tests-on-every-cpu.md)."""
    X, _ = make_nonlinear_mixture(5_000, random_state=0)
    # with no dependence term the critic only watches: one step an update
    plain = NonlinearPICA(n_components=2, dependence_weight=0, critic_steps=1, random_state=0)
    _, _, plain_follows = evaluate(plain.fit(X), 0)
    plain_leak = plain_follows[[0, 1], 1 - plain_follows.argmax(axis=1)].max()
    adm, followed = [], []
    for seed in (0, 1, 2):
        if followed == [True]:
            break
        adm.append(NonlinearPICA(n_components=2, n_init=8, random_state=seed).fit(X))
        followed.append(follows_the_factors(adm[-1], plain_leak))
    return adm, plain, followed


def test_adm_makes_the_bottleneck_far_less_dependent_than_a_plain_autoencoder(adm_and_plain):
    """The plain bottleneck mixes the factors: its codes are uncorrelated (whitened), yet
    dependent. ADM's are independent to the estimator's floor, and far less dependent
    (bounds from ten seeds under each CPU dispatch of .ci/as-cpu)."""
    adm, plain, _ = adm_and_plain
    plain_r2, plain_between, _ = evaluate(plain, 0)
    assert plain_r2 >= 0.98
    between = []
    for model in adm:
        r2, dependence, _ = evaluate(model, 0)
        assert r2 >= 0.98 and model.history_[-1]["val_critic_mse"] > 0.95
        between.append(dependence)
    assert max(between) < 0.1 and np.mean(between) < plain_between / 1.5


def test_each_component_follows_one_factor(adm_and_plain):
    """Seed 0, or else both seeds 1 and 2: each component follows one factor."""
    _, _, followed = adm_and_plain
    assert followed == [True] or followed[1:] == [True, True]


def test_decoder_contrast_measures_how_far_from_orthogonal_the_columns_are():
    rows = torch.randn(10, 3)
    autoencoders = _MLPAutoencoders(rows, 3, n_components=2, hidden=(), activation="tanh")
    angle = np.pi / 4
    columns = torch.tensor(
        [
            [[1.0, 0.0, 0.0], [0.0, 2.0, 0.0]],  # orthogonal: 0, whatever the norms
            [[1.0, 0.0, 0.0], [np.cos(angle), np.sin(angle), 0.0]],  # -log sin(angle)
            [[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]],  # a direction ignored: infinite
        ]
    )
    with torch.no_grad():
        autoencoders.decoder.weights[0].copy_(columns)
        contrast = autoencoders.selection_penalty(torch.randn(50, 6)).numpy()
    np.testing.assert_allclose(contrast[:2], [0.0, -np.log(np.sin(angle))], atol=1e-6)
    assert contrast[2] == np.inf


def test_codes_are_white_and_finish_folds_the_whitening_into_the_last_layer():
    """The codes of a batch are its encoder outputs whitened by their own moments; after
    ``finish`` the encoder alone gives the codes of the rows whose moments it folded."""
    rows = torch.randn(300, 5, dtype=torch.float64) @ torch.randn(5, 5, dtype=torch.float64)
    autoencoders = _MLPAutoencoders(rows, 2, n_components=3, hidden=(8,), activation="tanh")
    autoencoders.double()
    with torch.no_grad():
        codes = autoencoders.encode(rows)  # (300, 2 starts * 3)
        for start in codes.view(300, 2, 3).unbind(dim=1):
            np.testing.assert_allclose(start.mean(dim=0), 0.0, atol=1e-12)
            np.testing.assert_allclose(start.T @ start / 300, np.eye(3), atol=1e-4)  # ridge
        autoencoders.finish()
        folded = autoencoders.encoder(rows.expand(2, -1, -1)).transpose(0, 1).flatten(1)
    np.testing.assert_allclose(folded, codes, atol=1e-5)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_no_two_components_become_copies():
    """At 32 components on digits the game without whitening paired 27 of them into near
    copies (|correlation| > 0.9) within 50 updates, and 18 were still paired when it
    stopped: such a pair is predicted perfectly, and the critic's gradient vanishes there."""
    X = load_digits().data
    model = NonlinearPICA(32, max_iter=60, random_state=0).fit(X[:1500])
    correlation = np.corrcoef(model.transform(X[1500:]).T)
    np.fill_diagonal(correlation, 0.0)
    assert np.abs(correlation).max() < 0.5


@pytest.mark.parametrize("activation", sorted(_ACTIVATIONS))
@pytest.mark.parametrize("sizes", [(3, 5, 4, 6), (3, 6)])
def test_jacobian_gram_is_autograds(activation, sizes):
    torch.manual_seed(0)
    mlp = _BatchedMLP(2, sizes, activation).double()
    h = torch.randn(2, 7, 3, dtype=torch.float64)
    with torch.no_grad():
        gram = mlp.jacobian_gram(h)  # (starts, n, in, in)
    expected = torch.autograd.functional.jacobian(lambda x: mlp(x).sum(dim=1), h)
    # expected[s, o, t, n, i]: the rows summed over, each depends on its own input alone; t = s
    expected = torch.diagonal(expected, dim1=0, dim2=2).permute(3, 1, 2, 0)  # (s, n, in, out)
    expected = expected @ expected.mT
    np.testing.assert_allclose(gram.numpy(), expected.numpy(), atol=1e-12)


def test_tanh_from_sigmoid_is_tanh_with_tanhs_derivatives():
    x = torch.linspace(-20, 20, 4001, dtype=torch.float64, requires_grad=True)
    np.testing.assert_allclose(_Tanh.apply(x).detach(), torch.tanh(x).detach(), atol=1e-15)
    assert torch.autograd.gradcheck(_Tanh.apply, x[::100].detach().clone().requires_grad_())
    assert torch.autograd.gradgradcheck(_Tanh.apply, x[::100].detach().clone().requires_grad_())
    x32 = torch.randn(10_000)  # float32: within a few units in the last place of 1
    assert (_Tanh.apply(x32) - torch.tanh(x32)).abs().max() < 5e-7


def test_squared_error_is_each_starts_mean_squared_error_with_its_gradients():
    generator = torch.Generator().manual_seed(0)
    reconstruction = torch.randn(3, 7, 5, dtype=torch.float64, generator=generator)
    x = torch.randn(7, 5, dtype=torch.float64, generator=generator)
    expected = ((reconstruction - x) ** 2).mean(dim=(1, 2))
    torch.testing.assert_close(_SquaredError.apply(reconstruction, x), expected)
    inputs = (reconstruction.requires_grad_(), x.requires_grad_())
    assert torch.autograd.gradcheck(_SquaredError.apply, inputs)


def test_per_feature_scaling_keeps_equal_variances_and_floors_a_feature_that_barely_varies():
    from sklearn_adm._data.scaling import fit_scaling

    rng = np.random.default_rng(0)
    X = 3.0 * rng.standard_normal((2000, 3))
    _, scale = fit_scaling(X, per_feature=True)
    np.testing.assert_allclose(scale, X.std(axis=0), rtol=0.05)  # equal variances: unit
    rare = np.c_[X, np.zeros(2000)]
    rare[0, 3] = 1.0  # one row of 2,000 uses the last feature
    mean, scale = fit_scaling(rare, per_feature=True)
    spike = (rare[0, 3] - mean[3]) / scale[3]
    assert 0.5 < spike < 2.0  # plain standardisation: 44.7
    np.testing.assert_allclose(fit_scaling(1000 * rare, per_feature=True)[1], 1000 * scale)


def test_fitted_state_is_numpy_and_pickles(adm_and_plain):
    adm = adm_and_plain[0][0]
    X, _ = make_nonlinear_mixture(100, random_state=1)
    assert all(isinstance(w, np.ndarray) for w in adm.encoder_weights_ + adm.decoder_weights_)
    restored = pickle.loads(pickle.dumps(adm))
    np.testing.assert_array_equal(restored.transform(X), adm.transform(X))
    np.testing.assert_array_equal(
        restored.inverse_transform(adm.transform(X)), adm.inverse_transform(adm.transform(X))
    )


@pytest.mark.usefixtures("short_warmup")
def test_float32_in_float32_out():
    X, _ = make_nonlinear_mixture(300, random_state=0)
    with pytest.warns(ConvergenceWarning):
        model = NonlinearPICA(n_components=2, max_iter=5, random_state=0).fit(X.astype(np.float32))
    assert model.transform(X.astype(np.float32)).dtype == np.float32


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"activation": "sigmoid"}, "'activation' parameter of NonlinearPICA"),
        ({"hidden_layer_sizes": (8, 0)}, "hidden_layer_sizes must be positive"),
        ({"hidden_layer_sizes": 8}, "'hidden_layer_sizes' parameter"),
    ],
)
def test_bad_parameters(params, message):
    with pytest.raises(ValueError, match=message):
        NonlinearPICA(max_iter=2, **params).fit(np.random.default_rng(0).normal(size=(50, 3)))


@pytest.mark.parametrize(
    ("params", "message"),
    [
        # the default on 100 features: all of them through hidden layers of 64 units
        ({}, r"n_components=None keeps all 100 features, which exceeds .* at most 64 "),
        ({"n_components": 9, "hidden_layer_sizes": (32, 8)}, r"n_components=9 exceeds"),
    ],
)
def test_more_components_than_the_narrowest_layer_is_refused(params, message, monkeypatch):
    """Components computed from fewer hidden units than there are components are functions
    of one another: refused before any game is played (fitting the default on 384-dimensional
    embeddings took 2.6 s an update, for codes of rank 64)."""
    from sklearn_adm.game import _loop

    monkeypatch.setattr(_loop.AdversarialGame, "play", None)  # any game would fail
    X = np.random.default_rng(0).normal(size=(50, 100))
    with pytest.raises(ValueError, match=message + r".*Pass n_components <= \d+ or wider"):
        NonlinearPICA(max_iter=2, **params).fit(X)
    monkeypatch.undo()
    # as many components as the narrowest layer has units is allowed
    model = NonlinearPICA(8, hidden_layer_sizes=(8,), max_iter=2, random_state=0)
    with pytest.warns(ConvergenceWarning):
        assert model.fit(X).transform(X).shape == (50, 8)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_starts_kept_after_narrowing_play_on_as_they_would_have(monkeypatch):
    """After the game narrows to the two starts of lowest decoder contrast, those starts (and
    their critics) carry their optimizers' state: their weights end as in a game where all
    four played to the end."""
    from sklearn_adm.game import _loop
    from sklearn_adm.game._selection import StartSelection

    X, _ = make_nonlinear_mixture(1_000, random_state=0)
    games, kept = [], []
    play, narrow = _loop.AdversarialGame.play, _loop.AdversarialGame._narrow

    def recording_play(self, *args, **kwargs):
        games.append(self)
        return play(self, *args, **kwargs)

    def recording_narrow(self, keep, *args):
        kept.append(keep)
        return narrow(self, keep, *args)

    monkeypatch.setattr(_loop.AdversarialGame, "play", recording_play)
    monkeypatch.setattr(_loop.AdversarialGame, "_narrow", recording_narrow)
    settings = dict(n_components=2, max_iter=60, tol=0, random_state=0)
    policies = NonlinearPICA._game_policies

    def narrowing(schedule):
        def chosen(self):
            plan = policies(self)
            plan.selection = StartSelection(narrowing=schedule, narrow_by="penalty")
            return plan

        return chosen

    monkeypatch.setattr(NonlinearPICA, "_game_policies", narrowing(((30, 2),)))
    narrowed = NonlinearPICA(**settings).fit(X)
    monkeypatch.setattr(NonlinearPICA, "_game_policies", narrowing(()))
    NonlinearPICA(**settings).fit(X)
    (keep,) = kept
    assert len(keep) == 2 and narrowed.n_iter_ == 60
    two, four = (game.autoencoder for game in games)
    assert two.n_init == 2 and four.n_init == 4
    for small, full in zip(two.parameters(), four.parameters(), strict=True):
        torch.testing.assert_close(small, full[keep], rtol=1e-4, atol=1e-5)
    critics = [game.critic for game in games]
    assert critics[0].n_groups == 2
    z = torch.randn(256, 8, device=narrowed.device_)  # CUDA where the fits ran there
    columns = [2 * start + i for start in keep for i in range(2)]
    torch.testing.assert_close(
        critics[0](z[:, columns]), critics[1](z)[columns], rtol=1e-4, atol=1e-5
    )
