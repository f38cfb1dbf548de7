"""The allocator's thresholds are raised during a fit where the environment fixed them, and
put back afterwards."""

from sklearn_adm import _allocator


def recorder(monkeypatch):
    calls = []
    monkeypatch.setattr(_allocator, "_mallopt", lambda: lambda *args: calls.append(args))
    return calls


def test_thresholds_raised_during_a_fit_and_put_back(monkeypatch):
    calls = recorder(monkeypatch)
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")  # as Dask's nanny sets it
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    with _allocator.training_allocations():
        raised = list(calls)
    big = _allocator._TRAINING_THRESHOLD
    assert raised == [(_allocator._M_TRIM_THRESHOLD, big), (_allocator._M_MMAP_THRESHOLD, big)]
    assert calls[2:] == [
        (_allocator._M_TRIM_THRESHOLD, 65536),
        (_allocator._M_MMAP_THRESHOLD, _allocator._DEFAULT_THRESHOLD),
    ]


def test_nothing_changes_where_the_environment_left_the_allocator_alone(monkeypatch):
    calls = recorder(monkeypatch)
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    with _allocator.training_allocations():
        pass
    assert calls == []


def test_overlapping_fits_keep_the_thresholds_raised_until_the_last_one_ends(monkeypatch):
    """Fits that overlap (in threads, or one inside another) share the process's thresholds:
    the first to end must not put them back while another still trains."""
    calls = recorder(monkeypatch)
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")
    with _allocator.training_allocations():
        with _allocator.training_allocations():
            pass
        inside = list(calls)
    assert len(inside) == 2  # raised once, not yet put back
    assert len(calls) == 4 and calls[2] == (_allocator._M_TRIM_THRESHOLD, 65536)
