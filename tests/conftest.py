"""Fixtures of every test; the helpers the tests share are in :mod:`tests._helpers`."""

import numpy as np
import pytest

from tests._helpers import cut_warmup


def pytest_collection_modifyitems(items):
    """The doctests print fitted figures: CI runs them again as other CPUs would, with the
    tests marked ``numerics`` (.ci/run)."""
    for item in items:
        if isinstance(item, pytest.DoctestItem):
            item.add_marker(pytest.mark.numerics)


@pytest.fixture
def short_warmup(monkeypatch):
    """A warm-up of two steps, for tests that read what a fit returns (shapes, resolved
    parameters, dtypes), not how good it is."""
    cut_warmup(monkeypatch, 2)


@pytest.fixture
def rng():
    return np.random.default_rng(0)
