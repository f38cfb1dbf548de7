"""The m-spacing entropy and the rotation search that start ICA."""

import itertools
import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch

from sklearn_adm._numerics import spacings
from sklearn_adm._numerics.spacings import (
    _grid_entropy,
    _rounds,
    _turned_entropy,
    entropy_rotation,
    spacing_entropy,
)

pytestmark = pytest.mark.numerics


def test_spacing_entropy_reads_known_entropies():
    rng = np.random.default_rng(0)
    columns = np.c_[rng.uniform(0, 1, 20_000), rng.normal(size=20_000), rng.laplace(size=20_000)]
    entropy = spacing_entropy(torch.as_tensor(columns.T), spacing=141).numpy()
    expected = [0.0, 0.5 * math.log(2 * math.pi * math.e), 1 + math.log(2)]
    # Vasicek's estimate is biased low in long tails (measured 0.022 and 0.030 here)
    np.testing.assert_allclose(entropy, expected, atol=0.04)
    assert (entropy <= np.array(expected) + 0.005).all()


@pytest.mark.parametrize("d", [2, 3, 6, 7])
def test_rounds_pair_every_column_with_every_other_once(d):
    rounds = _rounds(d)
    pairs = [tuple(sorted(pair)) for pairs in rounds for pair in pairs]
    assert sorted(pairs) == list(itertools.combinations(range(d), 2))
    for pairs in rounds:  # a round's planes are disjoint, so they turn at once
        columns = [column for pair in pairs for column in pair]
        assert len(columns) == len(set(columns))


@pytest.mark.parametrize("d", [2, 4])
def test_entropy_rotation_undoes_a_rotation_of_independent_sources(d):
    rng = np.random.default_rng(1)
    sources = rng.uniform(-math.sqrt(3), math.sqrt(3), size=(2000, d))  # white
    rotation = np.linalg.qr(rng.normal(size=(d, d)))[0]
    torch.manual_seed(0)
    identity = torch.eye(d, dtype=torch.float64)
    found = entropy_rotation(torch.as_tensor(sources @ rotation), identity, sweeps=2)
    product = np.abs(rotation @ found.numpy())  # a signed permutation when the sources are found
    np.testing.assert_allclose(np.sort(product, axis=1)[:, -1], 1.0, atol=2e-3)


def test_one_column_is_left_as_it_is():
    rotation = torch.eye(1, dtype=torch.float64)
    Y = torch.randn(100, 1, dtype=torch.float64)
    assert entropy_rotation(Y, rotation, sweeps=2) is rotation


@pytest.mark.parametrize("threads", [1, 3])
def test_the_cpu_grid_in_numpy_reads_as_torch_on_any_number_of_threads(threads, monkeypatch):
    """On the CPU a grid is evaluated in numpy, its planes split among the threads; the
    entropies are torch's (the path of other devices) to float32 rounding."""
    monkeypatch.setattr(spacings, "_GRID_PER_THREAD", 1000)  # a thread for this small grid
    generator = torch.Generator().manual_seed(0)
    first, second = torch.randn(2, 5, 3001, generator=generator)
    angles = torch.rand(5, 24, generator=generator) - 0.5
    caller = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with ThreadPoolExecutor(threads) as pool:
            entropy = _grid_entropy(first, second, angles, 55, pool)
    finally:
        torch.set_num_threads(caller)
    cos, sin = angles.cos()[..., None], angles.sin()[..., None]
    expected = _turned_entropy(first[:, None], second[:, None], cos, sin, 55)
    assert entropy.shape == expected.shape == (5, 24) and entropy.dtype == torch.float32
    torch.testing.assert_close(entropy, expected, rtol=0, atol=1e-5)
    # a plane's entropy sum repeats every quarter turn: columns swap, one sign flips
    with ThreadPoolExecutor(1) as pool:
        turned = _grid_entropy(first, second, angles + math.pi / 2, 55, pool)
    torch.testing.assert_close(turned, entropy, rtol=0, atol=1e-5)
    assert torch.get_num_threads() == caller
