"""ADMCritic computes what Theorem 1 says: 1 - mCor^2(z_j, z_-j) per feature."""

import copy as copy_module
import pickle

import numpy as np
import pytest
import torch

from sklearn_adm import ADMCritic
from sklearn_adm.nn._critic import _standardize
from tests._helpers import held_out_mse, train_critic

pytestmark = pytest.mark.numerics


def split(z, n_train):
    return z[:n_train], z[n_train:]


def test_independent_features_read_one(rng):
    """Corollary 1: with nothing to predict, the trained critic's error on fresh rows is 1."""
    z = rng.uniform(size=(6000, 3))
    train, test = split(z, 4000)
    mse = held_out_mse(train_critic(train), test)
    np.testing.assert_allclose(mse, 1.0, atol=0.06)


def test_constant_prediction_gives_exactly_one():
    """Predicting the mean (0) of a standardised target costs exactly its variance, 1."""
    critic = ADMCritic(3)
    with torch.no_grad():
        critic.predictor.out_weight.zero_()
        critic.predictor.out_bias.zero_()
    mse = critic(torch.randn(500, 3))
    np.testing.assert_allclose(mse.detach().numpy(), 1.0, atol=1e-5)


def test_uncorrelated_but_dependent_pair_is_detected(rng):
    """(x, x^2) with x symmetric: Pearson correlation 0, maximal correlation 1."""
    x = rng.uniform(-1, 1, size=6000)
    z = np.c_[x, x**2]
    assert abs(np.corrcoef(z.T)[0, 1]) < 0.05
    train, test = split(z, 4000)
    mse = held_out_mse(train_critic(train), test)
    assert np.all(mse < 0.1), mse  # both directions: x^2 from x, and a probe of x (|x|) from x^2


def mean_independent_pair(rng, n):
    """Both conditional means are 0, yet |z_2| grows with |z_1| (paper, App. D.2, symmetrised)."""
    z1 = rng.uniform(-np.sqrt(3), np.sqrt(3), size=n)
    z2 = z1 * rng.standard_normal(n)
    return np.c_[z1, z2]


def test_dependence_beyond_the_conditional_mean_needs_probes(rng):
    z = mean_independent_pair(rng, 8000)
    train, test = split(z, 6000)
    with_probes = 1 - held_out_mse(train_critic(train, probes=True), test)
    without = 1 - held_out_mse(train_critic(train, probes=False), test)
    assert np.all(with_probes > 0.1), with_probes
    assert np.all(np.abs(without) < 0.03), without


def test_collapsed_probe_cannot_fake_dependence(rng):
    """A probe squeezed to a near-constant must not lower the error below 1 on independent data.

    With the usual ``(t - mean) / (std + eps)`` and a plain MSE, a near-constant probe output is
    standardised to about 0 and the predictors then "explain" it: the error drops towards 0.
    """
    z = torch.as_tensor(rng.uniform(size=(2000, 2)), dtype=torch.float32)
    critic = ADMCritic(2)
    with torch.no_grad():
        critic.probe.out_weight.mul_(1e-6)  # probe outputs now vary by ~1e-6: below the guard
    target, prediction = critic.target_and_prediction(z)
    assert target.var(dim=0).max() < 1e-3  # the degenerate, shrunken target
    plain_mse = (target - 0.0 * prediction).square().mean(dim=0)
    assert plain_mse.max() < 1e-3  # a plain MSE would read near-total dependence...
    mse = critic(z).detach()
    assert torch.all(mse >= 1.0 - 1e-6), mse  # ...ours reads none, whatever the predictors do


def test_error_is_invariant_to_the_scale_of_the_probe_output(rng):
    z = torch.as_tensor(rng.normal(size=(1000, 3)), dtype=torch.float32)
    critic = ADMCritic(3)
    before = critic(z).detach()
    with torch.no_grad():
        critic.probe.out_weight.mul_(50.0)
        critic.probe.out_bias.mul_(50.0)
    np.testing.assert_allclose(critic(z).detach().numpy(), before.numpy(), rtol=1e-4)


def test_error_is_invariant_to_the_scale_and_shift_of_the_input(rng):
    z = torch.as_tensor(rng.normal(size=(1000, 3)), dtype=torch.float32)
    critic = ADMCritic(3)
    np.testing.assert_allclose(
        critic(1000 * z + 7).detach().numpy(), critic(z).detach().numpy(), rtol=1e-4
    )


def test_constant_feature_has_no_dependence(rng):
    z = np.c_[rng.normal(size=3000), np.full(3000, 2.5), rng.normal(size=3000)]
    critic = train_critic(z[:2000], steps=200)
    mse = held_out_mse(critic, z[2000:])
    assert mse[1] >= 1.0 - 1e-6
    assert np.all(np.isfinite(mse))


@pytest.mark.parametrize("n_groups", [1, 2])
def test_each_predictor_sees_only_the_other_features_of_its_group(n_groups):
    critic = ADMCritic(4, n_groups=n_groups).double()
    z_std = torch.randn(64, 4, dtype=torch.float64)
    jacobian = torch.autograd.functional.jacobian(lambda z: critic.predictions(z).sum(0), z_std)
    sees = jacobian.abs().sum(dim=1) > 0  # sees[j, k]: prediction j depends on input k
    group = np.arange(4) // (4 // n_groups)
    expected = (group[:, None] == group[None, :]) & ~np.eye(4, dtype=bool)
    np.testing.assert_array_equal(sees.numpy(), expected)


def test_differentiable_in_inputs_and_parameters():
    critic = ADMCritic(3, critic_hidden=(8, 4), probe_hidden=(4, 3)).double()
    z = torch.randn(32, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda z: critic(z), (z,))
    critic(z).sum().backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in critic.parameters())


def test_standardize_uses_batch_statistics():
    z = torch.tensor([[1.0, 10.0], [3.0, 10.0], [5.0, 10.0]])
    out = _standardize(z)
    np.testing.assert_allclose(out[:, 0].numpy(), [-1.2247, 0.0, 1.2247], atol=1e-3)
    np.testing.assert_allclose(out[:, 1].numpy(), 0.0)


@pytest.mark.parametrize(
    ("shape", "message"), [((10, 4), r"\(n_samples, 3\)"), ((1, 3), "at least 2 samples")]
)
def test_bad_input_is_rejected(shape, message):
    with pytest.raises(ValueError, match=message):
        ADMCritic(3)(torch.zeros(shape))


@pytest.mark.parametrize(
    ("z", "message"),
    [
        (np.zeros((10, 3), dtype=np.float32), "expects a torch.Tensor, got ndarray"),
        (torch.zeros(10, 3, dtype=torch.long), "floating-point tensor, got torch.int64"),
        (torch.zeros(10, 3, dtype=torch.float64), r"z.to\(torch.float32\) or critic.to"),
    ],
    ids=["numpy", "integer", "float64"],
)
def test_input_of_another_type_is_rejected_with_a_remedy(z, message):
    with pytest.raises(TypeError, match=message):
        ADMCritic(3)(z)


def test_float64_critic_takes_float64_input():
    z = torch.randn(50, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    assert ADMCritic(3).double()(z).dtype == torch.float64


def test_bad_construction_is_rejected():
    with pytest.raises(ValueError, match="multiple of n_groups"):
        ADMCritic(5, n_groups=2)
    with pytest.raises(ValueError, match="hidden widths"):
        ADMCritic(3, critic_hidden=0)


def test_held_out_calibration_keeps_a_memorising_critic_honest(rng):
    """On few rows the critic memorises; calibrated on fresh rows it reads no dependence."""
    from sklearn_adm.game._loop import calibrate

    z = rng.uniform(size=(1200, 16))
    train, test = split(z, 600)
    critic = train_critic(train, steps=600)
    assert 1 - held_out_mse(critic, train).mean() > 0.2  # fake dependence on its own rows
    assert held_out_mse(critic, test).mean() > 1.05  # its raw predictions hurt on fresh rows
    alpha, mse = calibrate(critic, torch.as_tensor(test, dtype=torch.float32))
    assert torch.all((alpha >= 0) & (alpha <= 1))
    assert 1 - mse.mean().item() < 0.03  # honest: independent
    assert torch.all(mse <= 1.0 + 1e-6)


@pytest.mark.parametrize("groups", [[1], [2, 0]])
def test_keep_groups_keeps_those_groups_as_trained(groups):
    """Narrowing a grouped critic to some of its groups gives the same errors on them."""
    torch.manual_seed(0)
    critic = ADMCritic(6, n_groups=3)
    z = torch.randn(200, 6)
    full = critic(z).detach()
    columns = [column for group in groups for column in (2 * group, 2 * group + 1)]
    assert critic.group_features(groups) == columns
    critic.keep_groups(groups)
    assert critic.n_features == 2 * len(groups) and critic.n_groups == len(groups)
    np.testing.assert_allclose(critic(z[:, columns]).detach(), full[columns], rtol=1e-6)


def test_a_seed_gives_the_same_first_layer_whatever_the_grouping():
    """The grouped first layer is the dense one's diagonal blocks, each scaled to its fan-in:
    grouping the features (several starts in one critic) does not change what a seed draws."""
    torch.manual_seed(0)
    dense = ADMCritic(6).predictor_in.detach()[0]  # (6 * 32, 6), fan-in 5
    torch.manual_seed(0)
    grouped = ADMCritic(6, n_groups=3).predictor_in.detach()  # (3, 2 * 32, 2), fan-in 1
    for g in range(3):
        block = dense[64 * g : 64 * g + 64, 2 * g : 2 * g + 2]
        torch.testing.assert_close(grouped[g], block * 5**0.5)


def test_self_connections_start_and_stay_zero():
    """No feature sees itself: its weights into its own predictor are zero after training
    (with Adam) and after cutting the critic down to one group, and deep copies keep the rule."""
    from sklearn_adm.nn._critic import _self_connections

    torch.manual_seed(0)
    critic = ADMCritic(6, n_groups=2)
    optimizer = torch.optim.Adam(critic.parameters(), lr=0.1)
    z = torch.randn(64, 6)
    for _ in range(5):
        optimizer.zero_grad()
        critic(z).mean().backward()
        optimizer.step()
    assert torch.count_nonzero(_self_connections(critic.predictor_in)) == 0
    assert torch.count_nonzero(critic.predictor_in) == 2 * 3 * 2 * 32
    copy = pickle.loads(pickle.dumps(copy_module.deepcopy(critic)))
    for columns in (slice(None), slice(3, None)):  # the copy, then its second group alone
        optimizer = torch.optim.Adam(copy.parameters(), lr=0.1)
        copy(z[:, columns]).mean().backward()
        optimizer.step()
        assert torch.count_nonzero(_self_connections(copy.predictor_in)) == 0
        if copy.n_groups == 2:
            copy.keep_groups([1])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_graph_replayed_critic_steps_train_as_eager_steps():
    """On CUDA the critic's steps are captured once and replayed: the same updates as eager
    steps on the same minibatches."""
    from sklearn_adm.game._loop import CriticUpdates
    from sklearn_adm.nn._critic_step import critic_step
    from sklearn_adm.nn._optim import CriticAdam

    device = torch.device("cuda")
    batches = torch.randn(8, 128, 6, generator=torch.Generator().manual_seed(0)).to(device)
    critics = []
    for replay in (False, True):
        torch.manual_seed(0)
        critic = ADMCritic(6, n_groups=2).to(device)
        optimizer = CriticAdam(critic, 0.02, device)
        update = CriticUpdates(critic, optimizer, device)
        for batch in batches:
            update(batch) if replay else critic_step(critic, optimizer, batch)
        assert (update.graph is not None) == replay
        critics.append(critic)
    for eager, replayed in zip(*(c.parameters() for c in critics), strict=True):
        torch.testing.assert_close(replayed, eager, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n_groups", [1, 2])
@pytest.mark.parametrize("blocked", [True, False])
def test_training_step_updates_as_adam_updates(monkeypatch, n_groups, blocked):
    """A training step's gradients are written out by hand, over the activations of its
    forward pass; and a first layer above the block size never gets a full gradient:
    CriticAdam updates it block by block. Every parameter moves as plain Adam moves it after
    autograd's backward pass, the self-connections stay zero, and the layer's state is where
    Adam keeps it."""
    from sklearn_adm.nn import _optim
    from sklearn_adm.nn._critic import _self_connections
    from sklearn_adm.nn._critic_step import critic_step

    if blocked:  # blocks of the units of 3 predictors, 2 per group
        monkeypatch.setattr(_optim, "_BLOCK_BYTES", 3 * 6 * 8 * 8)
    # float64: the probes' output bias has no gradient but rounding, which Adam would magnify
    batches = torch.randn(4, 64, 12, generator=torch.Generator().manual_seed(0)).double()
    critics, optimizers = [], []
    for in_step in (False, True):
        torch.manual_seed(0)
        critic = ADMCritic(12, critic_hidden=8, n_groups=n_groups).double()
        optimizer = _optim.CriticAdam(critic, 0.05, torch.device("cpu"))
        for batch in batches:
            if in_step:
                critic_step(critic, optimizer, batch)
                assert (critic.predictor_in.grad is None) == blocked
            else:
                optimizer.zero_grad()
                critic(batch).view(n_groups, -1).mean(dim=1).sum().backward()
                optimizer.step()
        critics.append(critic)
        optimizers.append(optimizer)
    assert torch.count_nonzero(_self_connections(critics[1].predictor_in)) == 0
    # the tensors a step reuses stay out of copies and pickles
    assert critics[1].workspace.arrays
    for copy in (pickle.loads(pickle.dumps(critics[1])), copy_module.deepcopy(critics[1])):
        assert not copy.workspace.arrays
        torch.testing.assert_close(copy(batches[0]), critics[1](batches[0]))
    for plain, stepped in zip(*(c.parameters() for c in critics), strict=True):
        torch.testing.assert_close(stepped, plain, rtol=1e-7, atol=1e-9)
    states = [o.state[c.predictor_in] for o, c in zip(optimizers, critics, strict=True)]
    assert float(states[1]["step"]) == float(states[0]["step"]) == len(batches)
    torch.testing.assert_close(states[1]["exp_avg_sq"], states[0]["exp_avg_sq"])


@pytest.mark.parametrize(
    "layout",
    [
        {},
        {"n_groups": 3},
        {"probes": False},
        {"critic_hidden": (8, 4), "probe_hidden": (6, 3)},
        {"predictor_rank": 3, "n_groups": 2},
    ],
)
def test_written_out_gradients_are_autograds(layout):
    """The game's two derivatives, written out (``_critic_step``), equal autograd's: the
    training loss's with respect to every parameter, and a weighted sum of shrunk errors'
    with respect to the representations."""
    from sklearn_adm.nn._critic import dependence_mse
    from sklearn_adm.nn._critic_step import _CriticPass, dependence_gradient
    from sklearn_adm.nn._optim import CriticAdam

    torch.manual_seed(0)
    critic = ADMCritic(6, **layout).double()
    z = torch.randn(64, 6, dtype=torch.float64) ** 3
    twin = copy_module.deepcopy(critic)
    twin(z).view(twin.n_groups, -1).mean(dim=1).sum().backward()
    with torch.no_grad():
        forward = _CriticPass(critic, z, workspace=critic.workspace)
        weights = z.new_full((1,), critic.n_groups / 6)
        pairs = forward.parameter_gradients(weights, CriticAdam(critic, 0.01, z.device))
    names = {id(p): name for name, p in critic.named_parameters()}
    reference = dict(twin.named_parameters())
    assert sorted(names[id(p)] for p, _ in pairs) == sorted(reference)
    for parameter, gradient in pairs:
        torch.testing.assert_close(gradient, reference[names[id(parameter)]].grad)

    alpha, weights = torch.rand(6, dtype=torch.float64), torch.randn(6, dtype=torch.float64)
    leaf = z.clone().requires_grad_()
    target, prediction = twin.target_and_prediction(leaf)
    total = (weights * dependence_mse(target, alpha * prediction)).sum()
    errors, gradient = dependence_gradient(critic, z, alpha, weights)
    torch.testing.assert_close((weights * errors).sum(), total.detach())
    torch.testing.assert_close(gradient, torch.autograd.grad(total, leaf)[0])


@pytest.mark.parametrize("n_groups", [1, 2])
def test_low_rank_predictors_see_only_the_other_features_of_their_group(n_groups):
    critic = ADMCritic(6, n_groups=n_groups, predictor_rank=2).double()
    assert critic.predictor_in is None
    assert sum(p.numel() for p in (critic.predictor_projection, critic.predictor_mixing)) == (
        6 * 2 + 2 * 6 * 32
    )
    z_std = torch.randn(64, 6, dtype=torch.float64)
    jacobian = torch.autograd.functional.jacobian(lambda z: critic.predictions(z).sum(0), z_std)
    sees = jacobian.abs().sum(dim=1) > 1e-12
    group = np.arange(6) // (6 // n_groups)
    expected = (group[:, None] == group[None, :]) & ~np.eye(6, dtype=bool)
    np.testing.assert_array_equal(sees.numpy(), expected)


def test_low_rank_critic_detects_a_parabola_and_not_independence(rng):
    """Rank 2 among 8 columns: (x, x^2) read as dependent, the independent columns as not."""
    z = rng.uniform(-1, 1, size=(3000, 8))
    z[:, 1] = z[:, 0] ** 2
    critic = train_critic(z[:2000], steps=300, predictor_rank=2)
    dependence = 1 - held_out_mse(critic, z[2000:])
    assert dependence[1] > 0.8  # x^2 from x
    assert np.all(np.abs(dependence[2:]) < 0.05)


def test_low_rank_keep_groups_and_copies():
    torch.manual_seed(0)
    critic = ADMCritic(6, n_groups=3, predictor_rank=3)
    z = torch.randn(200, 6)
    full = critic(z).detach()
    copy = pickle.loads(pickle.dumps(critic))
    torch.testing.assert_close(copy(z).detach(), full)
    critic.keep_groups([2, 1])
    np.testing.assert_allclose(critic(z[:, [4, 5, 2, 3]]).detach(), full[[4, 5, 2, 3]], rtol=1e-6)


def test_bad_rank_is_rejected():
    with pytest.raises(ValueError, match="predictor_rank must be None or >= 1"):
        ADMCritic(4, predictor_rank=0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_graph_replays_the_update_by_blocks(monkeypatch):
    """A first layer updated block by block is captured and replayed on CUDA as eager steps
    run it."""
    from sklearn_adm.game._loop import CriticUpdates
    from sklearn_adm.nn import _optim
    from sklearn_adm.nn._critic_step import critic_step

    monkeypatch.setattr(_optim, "_BLOCK_BYTES", 3 * 6 * 32 * 4)
    device = torch.device("cuda")
    batches = torch.randn(8, 128, 12, generator=torch.Generator().manual_seed(0)).to(device)
    critics = []
    for replay in (False, True):
        torch.manual_seed(0)
        critic = ADMCritic(12, n_groups=2).to(device)
        optimizer = _optim.CriticAdam(critic, 0.02, device)
        update = CriticUpdates(critic, optimizer, device)
        for batch in batches:
            update(batch) if replay else critic_step(critic, optimizer, batch)
        assert (update.graph is not None) == replay
        critics.append(critic)
    for eager, replayed in zip(*(c.parameters() for c in critics), strict=True):
        torch.testing.assert_close(replayed, eager, rtol=1e-5, atol=1e-6)


def test_the_encoders_pass_through_the_critic_reuses_its_tensors():
    """The game's encoder step differentiates the critic on 512 rows at every update: its
    layer-sized tensors are kept from one pass to the next (fresh ones were faulted back in at
    every update), apart from those of the critic's own training steps on other rows."""
    from sklearn_adm.nn._critic_step import critic_step, dependence_gradient
    from sklearn_adm.nn._optim import CriticAdam

    torch.manual_seed(0)
    critic = ADMCritic(8, n_groups=2)
    optimizer = CriticAdam(critic, 0.01, torch.device("cpu"))
    z, weights = torch.randn(512, 8), torch.full((1,), -0.25)
    first = dependence_gradient(critic, z, torch.ones(8), weights)
    kept = {name: tensor.data_ptr() for name, tensor in critic.gradient_workspace.arrays.items()}
    critic_step(critic, optimizer, torch.randn(128, 8))  # the critic's own rows, elsewhere
    second = dependence_gradient(critic, z, torch.ones(8), weights)
    assert kept and kept == {
        name: tensor.data_ptr() for name, tensor in critic.gradient_workspace.arrays.items()
    }
    assert critic.workspace.arrays  # the training step kept its own
    # the kept tensors change no number: a copy of the critic starts with fresh ones
    fresh = dependence_gradient(copy_module.deepcopy(critic), z, torch.ones(8), weights)
    assert not copy_module.deepcopy(critic).gradient_workspace.arrays
    torch.testing.assert_close(second[1], fresh[1], rtol=0, atol=0)
    assert first[1].shape == (512, 8)
