"""A fit, a score and a critic step leave the caller's process as they found it: threads
(torch's, the BLAS's, numba's), random states, torch's global switches, warning filters,
the environment and the allocator (``test_allocator.py`` has its cases)."""

import os
import warnings

import numba
import numpy as np
import pytest
import torch
from threadpoolctl import threadpool_info

from sklearn_adm import ICA, PICA, ADMRegularizer, DependenceScorer, NonlinearPICA
from sklearn_adm._runtime import allocator
from sklearn_adm.datasets import make_nonlinear_mixture
from tests._helpers import RecordingLibc

X, _ = make_nonlinear_mixture(400, random_state=0)
QUICK = {"n_components": 2, "max_iter": 20, "random_state": 0}


#: built beforehand: building a critic draws from torch's generator, as any torch module does
REGULARIZER = ADMRegularizer(X.shape[1])


def _regularizer_step(regularizer=REGULARIZER):
    """A step of a user's training loop."""
    z = torch.as_tensor(X, dtype=torch.float32)
    regularizer.critic_step(z)
    regularizer.loss(z.requires_grad_()).backward()


WORK = {
    "PICA": lambda: PICA(**QUICK).fit(X),
    "ICA": lambda: ICA(**QUICK).fit(X),
    "NonlinearPICA": lambda: NonlinearPICA(hidden_layer_sizes=(8,), **QUICK).fit(X),
    "PICA.partial_fit": lambda: PICA(**QUICK).partial_fit(X).partial_fit(X),
    "ICA.partial_fit": lambda: ICA(**QUICK).partial_fit(X[:200]).partial_fit(X[200:]),
    "dcor": lambda: DependenceScorer("dcor").score(X),
    "adm": lambda: DependenceScorer("adm", random_state=0).score(X),
    "ADMRegularizer": _regularizer_step,
}


def _process_state():
    return {
        "torch threads": torch.get_num_threads(),
        "pools": [(pool["user_api"], pool["num_threads"]) for pool in threadpool_info()],
        "numba threads": numba.get_num_threads(),
        "torch rng": torch.random.get_rng_state(),
        "numpy rng": np.random.get_state()[1].copy(),  # noqa: NPY002
        "default dtype": torch.get_default_dtype(),
        "grad enabled": torch.is_grad_enabled(),
        "deterministic": torch.are_deterministic_algorithms_enabled(),
        "mkldnn": torch.backends.mkldnn.enabled,
        "warning filters": list(warnings.filters),
        "environment": dict(os.environ),
    }


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("name", WORK)
def test_work_leaves_the_process_as_it_found_it(monkeypatch, name):
    libc = RecordingLibc()
    monkeypatch.setattr(allocator, "_libc", lambda: libc)
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    caller_torch, caller_numba = torch.get_num_threads(), numba.get_num_threads()
    torch.set_num_threads(2)
    numba.set_num_threads(1)
    try:
        before = _process_state()
        WORK[name]()
        after = _process_state()
    finally:
        torch.set_num_threads(caller_torch)
        numba.set_num_threads(caller_numba)
    for key in before:
        if torch.is_tensor(before[key]) or isinstance(before[key], np.ndarray):
            assert np.array_equal(before[key], after[key]), key
        else:
            assert before[key] == after[key], key
    assert all(call == ("trim", 0) for call in libc.calls)  # glibc's own thresholds: left alone
