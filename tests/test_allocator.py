"""The allocator's thresholds are raised during a fit and put back afterwards, so that a
training step reuses the pages of the last one instead of faulting in fresh ones."""

import os
import subprocess
import sys
import textwrap

import pytest

from sklearn_adm._runtime import allocator


def recorder(monkeypatch):
    calls = []
    monkeypatch.setattr(allocator, "_mallopt", lambda: lambda *args: calls.append(args))
    return calls


TRIM, MMAP = allocator._M_TRIM_THRESHOLD, allocator._M_MMAP_THRESHOLD
RAISED = [(TRIM, allocator._TRAINING_THRESHOLD), (MMAP, allocator._TRAINING_THRESHOLD)]


def test_thresholds_the_environment_fixed_are_raised_during_a_fit_and_put_back(monkeypatch):
    calls = recorder(monkeypatch)
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")  # as Dask's nanny sets it
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    with allocator.training_allocations():
        raised = list(calls)
    assert raised == RAISED
    assert calls[2:] == [(TRIM, 65536), (MMAP, allocator._DEFAULT_THRESHOLD)]


def test_glibcs_own_thresholds_are_raised_during_a_fit_and_left_at_its_ceiling(monkeypatch):
    """glibc's adjustment cannot be switched back on: the thresholds end where it would
    have taken them (32 MiB for mapping, twice that for trimming)."""
    calls = recorder(monkeypatch)
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    with allocator.training_allocations():
        raised = list(calls)
    assert raised == RAISED
    assert calls[2:] == [(TRIM, 64 * 1024 * 1024), (MMAP, 32 * 1024 * 1024)]


def test_overlapping_fits_keep_the_thresholds_raised_until_the_last_one_ends(monkeypatch):
    """Fits that overlap (in threads, or one inside another) share the process's thresholds:
    the first to end must not put them back while another still trains."""
    calls = recorder(monkeypatch)
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")
    with allocator.training_allocations():
        with allocator.training_allocations():
            pass
        inside = list(calls)
    assert len(inside) == 2  # raised once, not yet put back
    assert len(calls) == 4 and calls[2] == (TRIM, 65536)


def test_building_a_critic_leaves_the_process_allocator_alone(monkeypatch):
    """A constructor must not change the user's process: only fits raise the thresholds."""
    from sklearn_adm import ADMCritic

    calls = recorder(monkeypatch)
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


def faults_per_step(script):
    """Page faults per training step of ``script`` in a fresh process with glibc's own
    thresholds (no ``MALLOC_`` variable)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    run = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    return float(run.stdout)


@pytest.mark.skipif(allocator._mallopt() is None, reason="glibc's allocator only")
def test_a_training_step_faults_in_no_fresh_pages():
    """With glibc's own thresholds, a critic step at 32 features in the game's loop faulted
    about 800 pages back in at every step (5.1-6.7 ms a step against 3.5-4.1 ms without)."""
    assert faults_per_step(_STEPS) < 50
