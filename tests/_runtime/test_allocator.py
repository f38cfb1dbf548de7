"""glibc's thresholds during a fit: raised only where the environment fixed them, and put
back to the environment's values when the fit ends; elsewhere the process is left alone. The
memory freed is handed back to the system when the last fit ends."""

import os
import subprocess
import sys
import textwrap

import pytest

from sklearn_adm import PICA
from sklearn_adm._runtime import allocator
from sklearn_adm.datasets import make_pca_vs_pica
from tests._helpers import RecordingLibc


def recorder(monkeypatch):
    libc = RecordingLibc()
    monkeypatch.setattr(allocator, "_libc", lambda: libc)
    return libc.calls


TRIM, MMAP = allocator._M_TRIM_THRESHOLD, allocator._M_MMAP_THRESHOLD
RAISED = [(TRIM, allocator._TRAINING_THRESHOLD), (MMAP, allocator._TRAINING_THRESHOLD)]


@pytest.fixture
def environment(monkeypatch):
    """No threshold fixed by the environment, to start from."""
    for variable in ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "GLIBC_TUNABLES"):
        monkeypatch.delenv(variable, raising=False)
    return monkeypatch


def test_thresholds_the_environment_fixed_are_raised_during_a_fit_and_put_back(environment):
    calls = recorder(environment)
    environment.setenv("MALLOC_TRIM_THRESHOLD_", "65536")  # as Dask's nanny sets it
    with allocator.training_allocations():
        raised = list(calls)
    assert raised == RAISED
    assert calls[2:] == [(TRIM, 65536), (MMAP, allocator._DEFAULT_THRESHOLD), ("trim", 0)]


def test_thresholds_fixed_by_glibc_tunables_are_put_back_too(environment):
    calls = recorder(environment)
    environment.setenv("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=262144:glibc.foo=1")
    with allocator.training_allocations():
        pass
    assert calls == [*RAISED, (TRIM, allocator._DEFAULT_THRESHOLD), (MMAP, 262144), ("trim", 0)]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_fit_leaves_glibcs_own_thresholds_alone(environment):
    """glibc's adjustment of its thresholds cannot be switched back on once one is set:
    where nothing fixed them, a fit sets none; it hands the memory freed back as it ends."""
    calls = recorder(environment)
    with allocator.training_allocations():
        pass
    PICA(n_components=2, max_iter=20, random_state=0).fit(make_pca_vs_pica(300, random_state=0)[0])
    assert calls and all(call == ("trim", 0) for call in calls)


def test_overlapping_fits_keep_the_thresholds_raised_until_the_last_one_ends(environment):
    """Fits that overlap (in threads, or one inside another) share the process's thresholds:
    the first to end must not put them back while another still trains."""
    calls = recorder(environment)
    environment.setenv("MALLOC_TRIM_THRESHOLD_", "65536")
    with allocator.training_allocations():
        with allocator.training_allocations():
            pass
        inside = list(calls)
    assert inside == RAISED  # raised once, not yet put back, nothing trimmed
    assert calls[2:] == [(TRIM, 65536), (MMAP, allocator._DEFAULT_THRESHOLD), ("trim", 0)]


def test_building_a_critic_leaves_the_process_allocator_alone(environment):
    """A constructor must not change the user's process: only fits raise the thresholds."""
    from sklearn_adm import ADMCritic

    environment.setenv("MALLOC_TRIM_THRESHOLD_", "65536")
    calls = recorder(environment)
    ADMCritic(8)
    assert calls == []


_STEPS = textwrap.dedent(
    """
    import resource, torch
    from sklearn_adm import ADMCritic
    from sklearn_adm.nn._training import train_critic

    torch.manual_seed(0)
    z = torch.randn(2048, 32)
    critic = ADMCritic(32, n_groups=4)
    kwargs = dict(batch_size=512, learning_rate=0.02, generator=torch.Generator().manual_seed(0))
    train_critic(critic, z, steps=5, **kwargs)  # the first steps allocate for good
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    train_critic(critic, z, steps=20, **kwargs)
    print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 20)
    """
)


def faults_per_step(script, **variables):
    """Page faults per training step of ``script`` in a fresh process whose environment
    fixes no threshold, or those of ``variables``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "GLIBC_TUN"))}
    env.update(variables)
    run = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    return float(run.stdout)


@pytest.mark.skipif(allocator._libc() is None, reason="glibc's allocator only")
@pytest.mark.parametrize("variables", [{}, {"MALLOC_TRIM_THRESHOLD_": "65536"}])
def test_a_training_step_faults_in_no_fresh_pages(variables):
    """The critic keeps its layers' tensors from one step to the next, which suffices with
    glibc's own thresholds; with the threshold Dask's nanny fixes, a step at 32 features
    faulted 120 pages back in (1.38 against 1.05 ms) until the fit raised it."""
    assert faults_per_step(_STEPS, **variables) < 50
