"""ADMRegularizer: the game inside a plain PyTorch loop, honest on finite data."""

import copy
import pickle

import numpy as np
import pytest
import torch
from torch import nn

from sklearn_adm import ADMRegularizer
from sklearn_adm.metrics import gradient_boosting_dependence

pytestmark = pytest.mark.numerics


def rotation(degrees):
    angle = np.deg2rad(degrees)
    c, s = np.cos(angle), np.sin(angle)
    return torch.tensor([[c, -s], [s, c]], dtype=torch.float32)


def uniform_sources(n, generator):
    return (torch.rand(n, 2, generator=generator) * 2 - 1) * 3**0.5


def train_unmixing(weight, seed, steps=300):
    """A linear autoencoder (untied decoder) on two uniform sources mixed by a 30 degree
    rotation, trained on fresh minibatches with reconstruction + weight * ADM."""
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    mixing = rotation(30)
    encoder, decoder = nn.Linear(2, 2, bias=False), nn.Linear(2, 2, bias=False)
    with torch.no_grad():
        encoder.weight.copy_(torch.eye(2))
        decoder.weight.copy_(torch.eye(2))
    reg = ADMRegularizer(2)
    optimizer = torch.optim.Adam([*encoder.parameters(), *decoder.parameters()], lr=1e-2)
    for _ in range(steps):
        x = uniform_sources(256, generator) @ mixing.T
        z = encoder(x)
        reg.critic_step(z)
        loss = (decoder(z) - x).square().mean() + weight * reg.loss(z)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        unmixed = encoder.weight @ mixing  # the identity up to scale and order when separated
        z = encoder(uniform_sources(3000, generator) @ mixing.T).numpy()
    unmixed = unmixed.abs() / unmixed.abs().amax(dim=1, keepdim=True)
    crosstalk = float(torch.minimum(unmixed, unmixed.flip(1)).max())  # 0 when separated
    return crosstalk, gradient_boosting_dependence(z, random_state=0), reg


@pytest.mark.parametrize("seed", [0, 1])
def test_adm_term_unmixes_what_the_task_loss_leaves_mixed(seed):
    """The reconstruction is the same for every invertible encoder, so the task loss alone
    keeps the 30 degree mixture (uncorrelated, dependent); with the ADM term the encoder turns
    to the sources, which trees then cannot predict from each other (squares included)."""
    crosstalk_plain, judge_plain, _ = train_unmixing(0.0, seed)
    crosstalk_adm, judge_adm, reg = train_unmixing(1.0, seed)
    assert crosstalk_plain > 0.5
    assert judge_plain[:, 1].mean() > 0.05
    assert crosstalk_adm < 0.1
    assert judge_adm.max() < 0.03
    assert (reg.held_out_mse > 0.95).all()


def test_reads_about_one_on_independent_inputs():
    torch.manual_seed(0)
    reg = ADMRegularizer(4, critic_steps=5)
    for _ in range(60):
        reg.critic_step(2 * torch.randn(256, 4))
    loss = reg.loss(2 * torch.randn(512, 4))
    assert abs(loss.item()) < 0.03  # variance 4: the hinge is 0, and so is the dependence
    np.testing.assert_allclose(reg.held_out_mse.numpy(), 1.0, atol=0.05)


def test_detects_uncorrelated_dependence():
    """(x, x^2): no correlation, each feature a function of the other (through the probe)."""
    torch.manual_seed(0)
    reg = ADMRegularizer(2, critic_steps=5)

    def batch():
        x = torch.rand(256, 1) * 2 - 1
        return torch.cat([x, x.square()], dim=1)

    for _ in range(100):
        reg.critic_step(batch())
    reg.loss(batch())
    assert (reg.held_out_mse < 0.2).all()


def test_a_critic_that_memorised_its_batch_does_not_drive_the_encoder():
    """On one fixed batch of independent features a wide critic learns its training rows by
    heart (error 0 there, "fully dependent"); the loss scores each half with the critic
    that did not see it, calibrated, and stays near 0, with next to no gradient."""
    torch.manual_seed(0)
    z = 2 * torch.randn(64, 4)
    reg = ADMRegularizer(4, critic_hidden=256, critic_steps=500)
    reg.critic_step(z)
    trained_on = torch.cat([z[:32], z[32:]], dim=1)
    assert reg.critic(trained_on).max().item() < 0.05  # memorised
    z = z.requires_grad_()
    loss = reg.loss(z)
    loss.backward()
    assert loss.item() < 0.1
    assert float(z.grad.norm()) < 0.1


def test_variance_hinge_is_in_the_loss():
    """The critic's part is 0 for a fresh critic fitted to nothing (alpha = 0 on noise); the
    hinge adds mean(relu(1 - var)) times variance_weight."""
    torch.manual_seed(0)
    z = 0.5 * torch.randn(4096, 3)  # variance 0.25: hinge 0.75 per feature
    weights = [0.0, 2.0]
    losses = [ADMRegularizer(3, variance_weight=w).loss(z).item() for w in weights]
    assert losses[1] - losses[0] == pytest.approx(2.0 * 0.75, abs=0.03)


def test_critic_steps_is_the_number_of_updates():
    reg = ADMRegularizer(3, critic_steps=3)
    reg.critic_step(torch.randn(32, 3))
    reg.critic_step(torch.randn(32, 3))
    steps = {float(state["step"]) for state in reg._optimizer.state.values()}
    assert steps == {6.0}


def test_state_dict_round_trip_inside_a_model():
    """A model holding the regulariser saves the critic, its optimizer and the last error;
    a copy loaded from it continues exactly as the original."""
    torch.manual_seed(0)
    model = nn.ModuleDict({"encoder": nn.Linear(5, 3), "reg": ADMRegularizer(3)})
    for _ in range(4):
        model["reg"].critic_step(model["encoder"](torch.randn(64, 5)))
    z_old = model["encoder"](torch.randn(64, 5)).detach()
    model["reg"].loss(z_old)
    state = model.state_dict()
    assert "reg.critic.predictor_in" in state and "reg._extra_state" in state

    twin = nn.ModuleDict({"encoder": nn.Linear(5, 3), "reg": ADMRegularizer(3)})
    twin.load_state_dict(state)
    torch.testing.assert_close(twin["reg"].held_out_mse, model["reg"].held_out_mse)
    z = torch.randn(64, 3)
    for module in (model, twin):
        module["reg"].critic_step(z)
    torch.testing.assert_close(twin["reg"].loss(z), model["reg"].loss(z))


@pytest.mark.parametrize("copier", [copy.deepcopy, lambda r: pickle.loads(pickle.dumps(r))])
def test_copies_train_on_like_the_original(copier):
    torch.manual_seed(0)
    reg = ADMRegularizer(3)
    reg.critic_step(torch.randn(32, 3))
    twin = copier(reg)
    z = torch.randn(32, 3)
    reg.critic_step(z)
    twin.critic_step(z)
    torch.testing.assert_close(twin.loss(z), reg.loss(z))


def test_autocast_keeps_the_critic_in_float32():
    torch.manual_seed(0)
    encoder = nn.Linear(4, 3)
    reg = ADMRegularizer(3)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        z = encoder(torch.randn(64, 4))
        assert z.dtype == torch.bfloat16
        reg.critic_step(z)
        loss = reg.loss(z)
    assert loss.dtype == torch.float32
    loss.backward()
    assert encoder.weight.grad is not None and torch.isfinite(encoder.weight.grad).all()
    assert all(p.dtype == torch.float32 for p in reg.parameters())


def test_loss_compiles_to_the_same_value():
    torch.manual_seed(0)
    reg = ADMRegularizer(3)
    z = torch.randn(64, 3)
    reg.critic_step(z)
    compiled = torch.compile(reg.loss, backend="aot_eager")
    torch.testing.assert_close(compiled(z), reg.loss(z))


def test_device_none_follows_the_first_input_and_to_moves_the_optimizer():
    reg = ADMRegularizer(3)
    assert reg.held_out_mse.device.type == "cpu"
    reg.critic_step(torch.randn(16, 3))
    reg.to("cpu")  # rebuilds the optimizer with its state
    assert {float(s["step"]) for s in reg._optimizer.state.values()} == {1.0}
    reg.critic_step(torch.randn(16, 3))


@pytest.mark.parametrize(
    "z, error, match",
    [
        (np.zeros((8, 3)), TypeError, "must be a torch.Tensor"),
        (torch.zeros(8, 4), ValueError, r"shape \(n_samples, 3\), got \(8, 4\)"),
        (torch.zeros(8), ValueError, r"shape \(n_samples, 3\)"),
        (torch.zeros(3, 3), ValueError, "at least 4"),
        (torch.zeros(8, 3, dtype=torch.int64), TypeError, "floating-point"),
    ],
)
def test_bad_inputs_are_refused_clearly(z, error, match):
    reg = ADMRegularizer(3)
    for method in (reg.critic_step, reg.loss):
        with pytest.raises(error, match=match):
            method(z)


def test_diverged_encoder_is_reported():
    z = torch.randn(8, 3)
    z[2, 1] = float("nan")
    with pytest.raises(ValueError, match="NaN or infinity"):
        ADMRegularizer(3).critic_step(z)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"n_features": 1}, ValueError, "n_features must be >= 2"),
        ({"n_features": 2.5}, TypeError, "n_features must be an int"),
        ({"n_features": 3, "critic_steps": 0}, ValueError, "critic_steps must be >= 1"),
        ({"n_features": 3, "critic_learning_rate": 0}, ValueError, "must be > 0"),
        ({"n_features": 3, "variance_weight": -1.0}, ValueError, "must be >= 0"),
        ({"n_features": 3, "probes": "yes"}, TypeError, "probes must be a bool"),
        ({"n_features": 3, "critic_hidden": 0}, ValueError, "hidden widths"),
        ({"n_features": 3, "device": "gpu"}, ValueError, "device must be"),
    ],
)
def test_bad_parameters_are_refused_clearly(kwargs, error, match):
    with pytest.raises(error, match=match):
        ADMRegularizer(**kwargs)
