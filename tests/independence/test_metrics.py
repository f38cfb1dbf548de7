"""The distance-correlation engine equals dcor's V-statistics to 1e-6 in float64."""

import dcor
import numpy as np
import pytest

from sklearn_adm import training_threads
from sklearn_adm.metrics import (
    distance_correlation_one_vs_rest,
    distance_correlation_pairwise,
    permuted_distance_correlation,
)

pytestmark = pytest.mark.numerics


def varied_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=300)
    yield "gaussian", rng.normal(size=(300, 4))
    yield "dependent", np.c_[x, x**2, np.sin(3 * x), rng.normal(size=300)]
    yield "heavy tails", rng.standard_cauchy(size=(300, 3))
    yield "ties", np.round(rng.normal(size=(300, 3)))
    yield "integers", rng.integers(0, 5, size=(300, 3))
    yield "constant column", np.c_[rng.normal(size=(300, 2)), np.full(300, 7.0)]
    yield "large offset and scale", 1e6 + 1e3 * rng.uniform(size=(300, 3))
    yield "three rows", rng.normal(size=(3, 3))


DATA = list(varied_data())


@pytest.mark.parametrize("squared", [False, True])
@pytest.mark.parametrize(("name", "Z"), DATA, ids=[name for name, _ in DATA])
def test_one_vs_rest_matches_dcor(name, Z, squared):
    reference_function = dcor.distance_correlation_sqr if squared else dcor.distance_correlation
    Z64 = Z.astype(float)
    expected = [reference_function(Z64[:, j], np.delete(Z64, j, axis=1)) for j in range(Z.shape[1])]
    np.testing.assert_allclose(
        distance_correlation_one_vs_rest(Z, squared=squared), expected, atol=1e-6, rtol=0
    )


@pytest.mark.parametrize("squared", [False, True])
@pytest.mark.parametrize(("name", "Z"), DATA, ids=[name for name, _ in DATA])
def test_pairwise_matches_dcor(name, Z, squared):
    reference_function = dcor.distance_correlation_sqr if squared else dcor.distance_correlation
    Z64 = Z.astype(float)
    d = Z.shape[1]
    expected = [[reference_function(Z64[:, j], Z64[:, k]) for k in range(d)] for j in range(d)]
    np.testing.assert_allclose(
        distance_correlation_pairwise(Z, squared=squared), expected, atol=1e-6, rtol=0
    )


@pytest.mark.parametrize("n", [2, 3, 7, 70])
def test_pairwise_by_sorting_is_dcors_naive_statistic_with_ties_and_constants(n):
    """The sweep over sorted columns gives the V-statistic of dcor's naive algorithm to 1e-10,
    with ties (rounded and discrete columns), a constant column and few rows."""
    rng = np.random.default_rng(n)
    x = rng.normal(size=n)
    Z = np.c_[x, x**2 + 0.1 * rng.normal(size=n), np.round(x), rng.integers(0, 2, n), np.ones(n)]
    expected = np.array(
        [
            [dcor.distance_correlation_sqr(Z[:, j], Z[:, k], method="naive") for k in range(5)]
            for j in range(5)
        ]
    )
    expected[np.diag_indices(5)] = Z.std(axis=0) > 0
    np.testing.assert_allclose(
        distance_correlation_pairwise(Z, squared=True), expected, atol=1e-10, rtol=0
    )


def test_pairwise_of_many_columns_is_dcors_statistic_through_one_matrix_product():
    """From 32 columns the pairwise matrix takes its row products from one matrix product:
    the same numbers as dcor's naive algorithm, with ties."""
    rng = np.random.default_rng(32)
    Z = rng.normal(size=(150, 32))
    Z[:, 1] = Z[:, 0] ** 2
    Z[:, 2] = np.round(Z[:, 2])
    expected = np.array(
        [
            [dcor.distance_correlation_sqr(Z[:, j], Z[:, k], method="naive") for k in range(32)]
            for j in range(32)
        ]
    )
    np.testing.assert_allclose(
        distance_correlation_pairwise(Z, squared=True), expected, atol=1e-10, rtol=0
    )


def test_pairwise_at_many_rows_equals_dcors_sorting_algorithm():
    """At 140,000 rows (the sweep's two-level tree), with a relation whose ranks interleave,
    the same numbers as dcor's own O(n log n) algorithm."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=140_000)
    Z = np.c_[x, np.sin(4 * x) + rng.normal(size=140_000), rng.normal(size=140_000)]
    result = distance_correlation_pairwise(Z, squared=True)
    for j, k in [(0, 1), (0, 2), (1, 2)]:
        expected = dcor.distance_correlation_sqr(Z[:, j], Z[:, k], method="avl")
        assert result[j, k] == pytest.approx(expected, abs=1e-10)
    assert result[0, 1] > 0.01 > 1e-4 > result[0, 2]


@pytest.mark.parametrize("n", [300, 140_000])
def test_row_products_of_one_matrix_product_are_those_the_sweep_adds(n):
    """The pairwise matrix takes the row products of all pairs from one matrix product; a
    test's permutations add them in the sweep. Both give the same n^2 dCov^2, with one tree
    over the ranks (300 rows) and with the two-level one (140,000 rows)."""
    from sklearn_adm.independence import _sorting
    from sklearn_adm.independence._kernels import run_serially

    rng = np.random.default_rng(n)
    x = rng.normal(size=n)
    Z = np.c_[x, np.abs(x) + rng.normal(size=n), np.round(2 * x), rng.normal(size=n)]
    columns, variances = _sorting._sorted_columns(Z)
    pairs = np.array([[0, 1], [1, 0], [2, 3], [0, 2], [3, 1]])
    swept = _sorting._covariances_by(run_serially, columns, pairs, _sorting._UNMOVED, True)[0]
    split = _sorting._covariances_by(run_serially, columns, pairs, _sorting._UNMOVED, False)[0]
    split += _sorting._row_terms(columns, pairs)
    np.testing.assert_allclose(split, swept, rtol=0, atol=1e-9 * variances.max())
    assert abs(swept[0] - swept[1]) <= 1e-9 * variances.max()  # symmetric in x and y
    assert swept[0] > 10 * abs(swept[4])  # |x| + noise depends on x; the last pair does not


def test_the_one_tree_is_sized_by_the_cache_the_system_reports(tmp_path):
    """The sweep's one tree over all ranks is used while it fits a core's L2 cache as Linux
    reports it (sizes in KiB), with 2 MiB where the system says nothing."""
    from sklearn_adm.independence._sorting import _ONE_TREE_ROWS, _core_cache_bytes

    for index, (level, kind, size) in enumerate(
        [
            (1, "Data", "48K"),
            (1, "Instruction", "32K"),
            (2, "Unified", "512K"),
            (3, "Unified", "32768K"),
        ]
    ):
        folder = tmp_path / f"index{index}"
        folder.mkdir()
        for name, value in (("level", level), ("type", kind), ("size", size)):
            (folder / name).write_text(f"{value}\n")
    assert _core_cache_bytes(1, 0, root=tmp_path) == 48 * 1024
    assert _core_cache_bytes(2, 0, root=tmp_path) == 512 * 1024
    assert _core_cache_bytes(2, 7, root=tmp_path / "absent") == 7
    assert _ONE_TREE_ROWS == _core_cache_bytes(2, 2**21) // 16


def test_pairwise_rejects_what_it_cannot_measure():
    with pytest.raises(ValueError, match="Input contains NaN"):
        distance_correlation_pairwise(np.array([[0.0, 1.0], [np.nan, 2.0]]))
    with pytest.raises(ValueError, match="Expected 2D array"):
        distance_correlation_pairwise(np.arange(5.0))


def test_dependent_feature_scores_higher_than_independent_ones():
    rng = np.random.default_rng(2)
    x = rng.uniform(-1, 1, size=1000)
    scores = distance_correlation_one_vs_rest(np.c_[x, x**2, rng.uniform(size=1000)])
    assert scores[0] > 0.3 and scores[1] > 0.3 and scores[2] < 0.1


def test_torch_engine_matches_the_numba_engine():
    """The path taken on accelerators, checked here on the CPU through the same torch code."""
    from sklearn_adm.independence._distance import _one_vs_rest_sums, _one_vs_rest_sums_torch

    Z = np.random.default_rng(3).normal(size=(300, 5))
    sums = np.zeros((5, *Z.shape))
    _one_vs_rest_sums(Z, sums, np.empty(Z.shape[1]), 0, len(Z), 1)
    for numba_sums, torch_sums in zip(
        sums, _one_vs_rest_sums_torch(Z, "cpu", block_bytes=1e5), strict=True
    ):
        np.testing.assert_allclose(torch_sums, numba_sums, rtol=1e-10, atol=1e-9)


def test_numba_kernel_leaves_torch_threads_as_they_were():
    """The kernels' threads are chosen as a fit's: in a fresh process, torch's count is the
    caller's afterwards (a Dask worker of one thread must stay on one)."""
    import subprocess
    import sys

    script = (
        "import numpy as np, torch\n"
        "from sklearn_adm.metrics import distance_correlation_one_vs_rest\n"
        "torch.set_num_threads(1)\n"
        "distance_correlation_one_vs_rest(np.random.default_rng(0).normal(size=(200, 3)))\n"
        "print(torch.get_num_threads())\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.stdout.strip() == "1", result.stderr


@pytest.mark.parametrize("n_threads", [1, 2])
def test_permuted_distance_correlation_matches_dcor(n_threads):
    """Each permutation's statistic is dcor's on the permuted rows, on one thread and on
    two."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(120, 3))
    Y = np.c_[X[:, 0] ** 2, rng.normal(size=120)] + 0.5 * rng.normal(size=(120, 2))
    orders = np.array([rng.permutation(120) for _ in range(5)])
    with training_threads(n_threads):
        observed, permuted = permuted_distance_correlation(X, Y, orders)
    assert observed == pytest.approx(dcor.distance_correlation_sqr(X, Y), rel=1e-10)
    expected = [dcor.distance_correlation_sqr(X, Y[order]) for order in orders]
    np.testing.assert_allclose(permuted, expected, rtol=1e-9)
    assert (permuted < observed).all()  # Y depends on X's first column
    constant = permuted_distance_correlation(X, np.ones((120, 1)), orders)
    assert constant[0] == 0.0 and (constant[1] == 0.0).all()


def test_one_vs_rest_is_the_same_to_the_bit_on_any_number_of_threads():
    """A permutation test's evaluations share one choice of threads; each row's sums are
    made by one thread in one order, so the values are those of one thread alone."""
    from sklearn_adm.independence import _distance

    rng = np.random.default_rng(5)
    arrays = [rng.normal(size=(80, 3)) for _ in range(4)]
    arrays[0][:, 1] += arrays[0][:, 0] ** 2
    with training_threads(3):
        together = _distance._one_vs_rest_of_each(iter(arrays), len(arrays))
    with training_threads(1):
        one_at_a_time = [distance_correlation_one_vs_rest(Z) for Z in arrays]
    np.testing.assert_array_equal(together, one_at_a_time)


def test_blockwise_statistics_are_the_same_to_the_bit_on_any_number_of_threads():
    """The blocks' products (``vdot``) run beside the kernel's threads on the caller's BLAS
    threads, whatever the kernels' choice: the statistics do not round with the load."""
    from sklearn_adm.independence._distance import blockwise_distance_correlation

    rng = np.random.default_rng(6)
    X = rng.normal(size=(3000, 2))
    Y = np.abs(X) + rng.normal(size=(3000, 2))
    blocks = np.repeat(np.arange(6), 500)
    orders = np.array([np.arange(3000) for _ in range(16)])
    with training_threads(1):
        one = blockwise_distance_correlation(X, Y, blocks, orders)
    with training_threads(2):
        two = blockwise_distance_correlation(X, Y, blocks, orders)
    assert one[0] == two[0] and np.array_equal(one[1], two[1])
    assert one[0] > 0.05 and np.allclose(one[1], one[0])  # unmoved rows: the observed value


@pytest.mark.parametrize("interleave", [False, True])
def test_kernel_threads_run_every_chunk_once_and_raise_a_helpers_error(interleave):
    """The runner hands each chunk of the loop, a run or interleaved, to one thread, each
    thread its own room; an empty loop calls nothing."""
    import threading
    import time

    from sklearn_adm._runtime.threads import _usable_cores
    from sklearn_adm.independence._kernels import CHUNKS_PER_THREAD, kernel_threads

    seen, steps, rooms = [], [], set()

    def kernel(out, room, first, stop, step):
        rooms.add(id(room))
        steps.append(step)
        out.extend(range(first, stop, step))

    with training_threads(3), kernel_threads(10**9) as run:
        run(kernel, 1000, lambda: (np.empty(1),), seen, interleave=interleave)
        run(kernel, 0, lambda: (np.empty(1),), seen, interleave=interleave)
    np.testing.assert_array_equal(sorted(seen), np.arange(1000))
    threads = min(3, _usable_cores())  # at most one a core
    chunks = CHUNKS_PER_THREAD * threads if threads > 1 else 1
    assert len(steps) == chunks and set(steps) == {chunks if interleave else 1}
    assert 1 <= len(rooms) <= threads

    def failing(first, stop, step):
        time.sleep(0.001)  # leaves the GIL, as the kernels do: the helpers take chunks
        if threading.current_thread() is not threading.main_thread():
            raise ValueError("a helper's chunk failed")

    with pytest.raises(ValueError, match="a helper's chunk failed"):
        with training_threads(3), kernel_threads(10**9) as run:
            run(failing, 1000, tuple, interleave=interleave)


def test_one_vs_rest_on_projections_estimates_the_exact_statistic():
    """The projection estimate (Huang & Huo 2017) comes near the exact statistic where every
    column depends on the others, and near the floor where none does; seeded, it repeats."""
    rng = np.random.default_rng(0)
    sources = rng.uniform(-1, 1, size=(3000, 8))
    mixed = sources @ rng.normal(size=(8, 8))
    for Z in (mixed, sources):
        exact = distance_correlation_one_vs_rest(Z, squared=True)
        estimate = distance_correlation_one_vs_rest(
            Z, squared=True, n_projections=64, random_state=0
        )
        np.testing.assert_allclose(estimate, exact, rtol=0.25, atol=2e-3)
    again = distance_correlation_one_vs_rest(mixed, n_projections=8, random_state=1)
    np.testing.assert_array_equal(
        again, distance_correlation_one_vs_rest(mixed, n_projections=8, random_state=1)
    )
    with pytest.raises(ValueError, match="n_projections == 0, must be >= 1"):
        distance_correlation_one_vs_rest(mixed, n_projections=0)


def test_permutations_of_samples_too_large_for_memory_are_refused():
    """Two n x n matrices of 1,000,000 rows (16 TB): a clear error, not an allocation."""
    x = np.zeros((1_000_000, 1))
    with pytest.raises(ValueError, match=r"need 14901.2 GiB; .* memory linear in the rows"):
        permuted_distance_correlation(x, x, np.zeros((1, 1_000_000), dtype=np.intp))
