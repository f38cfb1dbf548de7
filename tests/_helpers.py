"""What the tests share: a critic trained as the game trains it, a causal chain, the Amari
error, the critic's warm-up cut short for tests that read a fit's shape, not its quality,
and glibc's allocator calls recorded."""

import numpy as np
import torch

from sklearn_adm import ADMCritic
from sklearn_adm.nn._critic_step import critic_step
from sklearn_adm.nn._optim import CriticAdam


def train_critic(z, *, steps=400, batch_size=512, seed=0, **critic_params):
    """Train an ADMCritic on the rows of ``z`` with the game's own critic update."""
    torch.manual_seed(seed)
    z = torch.as_tensor(z, dtype=torch.float32)
    critic = ADMCritic(z.shape[1], **critic_params)
    optimizer = CriticAdam(critic, 2e-2, torch.device("cpu"))
    generator = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        rows = torch.randint(len(z), (batch_size,), generator=generator)
        critic_step(critic, optimizer, z[rows])
    return critic


def held_out_mse(critic, z):
    with torch.no_grad():
        return critic(torch.as_tensor(z, dtype=torch.float32)).numpy()


def chain(n, rng, direct=0.0):
    """X -> Z -> Y through nonlinear maps (X independent of Y given Z), plus ``direct`` X in Y."""
    x = rng.uniform(-1, 1, size=n)
    z = np.sin(3 * x) + 0.3 * rng.normal(size=n)
    y = np.cos(2 * z) + direct * x + 0.3 * rng.normal(size=n)
    return x[:, None], y[:, None], z[:, None]


def amari_error(unmixing, mixing):
    """Amari's distance of ``unmixing @ mixing`` from a scaled permutation, x 100."""
    P = np.abs(unmixing @ mixing)
    m = len(P)
    rows = (P.sum(axis=1) / P.max(axis=1) - 1).sum()
    cols = (P.sum(axis=0) / P.max(axis=0) - 1).sum()
    return 100 * (rows + cols) / (2 * m * (m - 1))


#: the shortest warm-up of ICA's critic after which it still sees the dependence the tests'
#: data leave, so that ICA plays
ICA_WARMUP_STEPS = 20


def cut_warmup(patch, steps):
    """Cut the critic's warm-up before PICA's and NonlinearPICA's first update to ``steps``
    through ``patch`` (a ``pytest.MonkeyPatch``); ICA's to ``ICA_WARMUP_STEPS``, since ICA
    plays only where its critic sees dependence, which a critic of a few steps does not."""
    from sklearn_adm.decomposition import _ica, _nonlinear, _pica

    patch.setattr(_pica, "WARMUP_STEPS", steps)
    patch.setattr(_nonlinear, "_WARMUP_STEPS", steps)
    patch.setattr(_ica, "WARMUP_STEPS", ICA_WARMUP_STEPS)


class RecordingLibc:
    """glibc's two calls, recorded: ``mallopt``'s arguments, and ``("trim", pad)``."""

    def __init__(self):
        self.calls = []

    def mallopt(self, *args):
        self.calls.append(args)

    def malloc_trim(self, pad):
        self.calls.append(("trim", pad))
