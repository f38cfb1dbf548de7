"""The game's optimizers step as torch's Adam, share its state format, and spare a fit the
import of torch._dynamo that any torch.optim optimizer makes."""

import copy
import subprocess
import sys
import textwrap

import pytest
import torch
from torch import nn

from sklearn_adm.nn._optim import Adam

pytestmark = pytest.mark.numerics


def _model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 2))


def _train(model, optimizer, batches):
    for x in batches:
        optimizer.zero_grad()
        model(x).square().mean().backward()
        optimizer.step()


@pytest.mark.parametrize("fused", [True, False])
def test_adam_steps_and_saves_as_torch_adam(fused):
    batches = torch.randn(6, 16, 5, generator=torch.Generator().manual_seed(1))
    ours, theirs = _model(), _model()
    adam = Adam(ours.parameters(), 0.05, fused=fused)
    reference = torch.optim.Adam(theirs.parameters(), lr=0.05, fused=fused)
    _train(ours, adam, batches[:3])
    _train(theirs, reference, batches[:3])
    for p, q in zip(ours.parameters(), theirs.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=0, atol=1e-7)

    # the state_dicts are interchangeable: each optimizer goes on from the other's state
    # (copied: loading shares the tensors, in torch's optimizers too)
    twin, reference_twin = _model(), _model()
    twin.load_state_dict(theirs.state_dict())
    reference_twin.load_state_dict(ours.state_dict())
    adam_twin = Adam(twin.parameters(), 0.05, fused=fused)
    adam_twin.load_state_dict(copy.deepcopy(reference.state_dict()))
    reference_from_ours = torch.optim.Adam(reference_twin.parameters(), lr=0.05, fused=fused)
    reference_from_ours.load_state_dict(copy.deepcopy(adam.state_dict()))
    for model, optimizer in [(twin, adam_twin), (reference_twin, reference_from_ours)]:
        _train(model, optimizer, batches[3:])
    _train(theirs, reference, batches[3:])
    for model in (twin, reference_twin):
        for p, q in zip(model.parameters(), theirs.parameters(), strict=True):
            torch.testing.assert_close(p, q, rtol=0, atol=1e-6)


def test_adam_rejects_another_model_state():
    adam = Adam(_model().parameters(), 0.05)
    other = Adam(nn.Linear(2, 2).parameters(), 0.05)
    with pytest.raises(ValueError, match="other parameter groups"):
        adam.load_state_dict(other.state_dict())


def test_fits_import_neither_torch_dynamo_nor_sympy():
    """torch.optim's optimizers and torch.func's forward mode import torch._dynamo when first
    used, which took over a second of a first fit, and torch.broadcast_shapes imports sympy
    (0.2-0.3 s of a first PICA or ICA fit); no estimator needs either."""
    script = textwrap.dedent(
        """
        import sys, warnings
        import numpy as np, torch
        from sklearn_adm import ADMRegularizer, ICA, NonlinearPICA, PICA
        from sklearn_adm.datasets import make_pca_vs_pica

        warnings.simplefilter("ignore")
        X, _ = make_pca_vs_pica(1000, random_state=0)
        PICA(2, max_iter=5, random_state=0).fit(X)
        NonlinearPICA(2, max_iter=5, random_state=0).fit(X)
        ICA(2, max_iter=5, random_state=0).fit(X)
        ADMRegularizer(3).critic_step(torch.randn(32, 3))
        print("torch._dynamo" in sys.modules, "sympy" in sys.modules)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-2:] == ["False", "False"]
