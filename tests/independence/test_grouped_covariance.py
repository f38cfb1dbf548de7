"""The conditional distance test from ASYMPTOTIC_ROWS rows: its parts and its level."""

import dcor
import numpy as np
import pytest
from scipy import integrate, stats

from sklearn_adm import DependenceScorer
from sklearn_adm._numerics.workspace import Workspace
from sklearn_adm.independence import _grouped_covariance as grouped_covariance
from sklearn_adm.independence._grouped_covariance import (
    ASYMPTOTIC_ROWS,
    GROUP_ROWS,
    _imhof_end,
    _morton_code,
    asymptotic_conditional_test,
    frequency_features,
    groups_along,
    weighted_chi2_sf,
)
from tests._helpers import chain

pytestmark = pytest.mark.numerics


@pytest.mark.filterwarnings("error")  # QUADPACK's warnings: an integral that did not converge
def test_weighted_chi2_tail_is_the_chi2_tail_for_equal_weights():
    for k, x in [(1, 3.84), (2, 0.5), (4, 9.49), (128, 150.0)]:
        assert weighted_chi2_sf(x, np.ones(k)) == pytest.approx(stats.chi2.sf(x, k), abs=1e-9)


def test_weighted_chi2_tail_matches_simulation():
    rng = np.random.default_rng(0)
    weights = rng.exponential(size=20) ** 2
    draws = rng.chisquare(1, size=(200_000, 20)) @ weights
    for x in np.quantile(draws, [0.5, 0.95, 0.99]):
        assert weighted_chi2_sf(x, weights) == pytest.approx(np.mean(draws > x), abs=2e-3)


def test_weighted_chi2_tail_with_hundreds_of_weights_matches_simulation():
    """The test's case: hundreds of weights, a few large, the rest small (a spectrum of
    the group sums' covariance); Imhof's integral then ends near its true end."""
    rng = np.random.default_rng(1)
    weights = np.sort(rng.exponential(size=300) ** 3)[::-1]
    draws = rng.chisquare(1, size=(100_000, 300)) @ weights
    for x in np.quantile(draws, [0.5, 0.95, 0.99]):
        assert weighted_chi2_sf(x, weights) == pytest.approx(np.mean(draws > x), abs=3e-3)


def test_imhof_integral_beyond_its_end_is_under_its_error():
    """The rest of the integrand's envelope beyond ``_imhof_end``, over pi, is under
    1e-10, and the end is not far beyond where it is: the rest from two thirds of it is
    above 1e-13."""
    rng = np.random.default_rng(2)
    for weights in (rng.exponential(size=300) ** 3, np.ones(40), rng.uniform(0.1, 1, 12)):
        end = _imhof_end(weights)

        def envelope(u, weights=weights):
            return np.exp(-0.25 * np.sum(np.log1p((weights * u) ** 2))) / u

        def rest(start):
            return integrate.quad(envelope, start, np.inf, epsabs=1e-16, limit=200)[0] / np.pi

        assert 1e-13 < rest(2 * end / 3) and rest(end) < 1e-10


def test_no_variance_gives_a_p_value_of_one():
    assert weighted_chi2_sf(0.0, np.zeros(8)) == 1.0


def test_a_far_tail_is_chernoffs_bound_above_the_exact_value():
    exact = stats.chi2.sf(200.0, 4)  # 5e-42
    p_value = weighted_chi2_sf(200.0, np.ones(4))
    assert exact <= p_value < 1e-8


def test_the_features_covariances_average_to_the_distance_covariance():
    """With many frequencies, the mean over frequency pairs of the squared norm of the
    features' cross-covariance is the V-statistic of the squared distance covariance
    (Székely et al. 2007, eq. 2.5: the weighted integral of the empirical characteristic
    functions' difference)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 1))
    y = x**2 + 0.5 * rng.normal(size=(300, 1))
    frequencies = 3000
    U = frequency_features(x, frequencies, rng)
    V = frequency_features(y, frequencies, rng)
    U, V = U - U.mean(axis=0), V - V.mean(axis=0)
    estimate = np.sum((U.T @ V / 300) ** 2) / frequencies**2
    exact = dcor.distance_covariance_sqr(x[:, 0], y[:, 0])
    assert estimate == pytest.approx(exact, rel=0.1)


def test_groups_are_runs_of_nearby_rows():
    rng = np.random.default_rng(0)
    z = rng.uniform(size=(1003, 1))
    order, groups = groups_along(z)
    assert sorted(order) == list(range(1003))
    sizes = np.bincount(groups)
    assert np.all(np.diff(groups) >= 0) and sizes.min() == GROUP_ROWS
    assert sizes.sum() == 1003 and sizes.max() == GROUP_ROWS + 3
    spans = np.maximum.reduceat(z[order, 0], np.cumsum(sizes) - sizes) - np.minimum.reduceat(
        z[order, 0], np.cumsum(sizes) - sizes
    )
    assert np.median(spans) < 2 * GROUP_ROWS / 1003


def test_groups_of_a_discrete_z_hold_one_value_each():
    rng = np.random.default_rng(0)
    z = rng.integers(0, 5, size=(400, 2)).astype(float)
    order, groups = groups_along(z)
    for group in np.unique(groups):
        assert len(np.unique(z[order][groups == group], axis=0)) == 1


def test_groups_along_several_columns_are_local():
    rng = np.random.default_rng(0)
    z = rng.uniform(size=(20_000, 2))
    order, groups = groups_along(z)
    starts = np.flatnonzero(np.r_[True, np.diff(groups) > 0])
    spans = np.maximum.reduceat(z[order], starts) - np.minimum.reduceat(z[order], starts)
    # a square of 8 of 20,000 uniform points has sides of 0.02
    assert np.median(spans.max(axis=1)) < 0.05


def test_morton_code_interleaves_the_columns_quantile_bits():
    """Two columns at 1,024 rows take 7 bits each: a row's code has column 0's top bit
    first, then column 1's, and so on; each column's bits are its rank's."""
    rng = np.random.default_rng(3)
    z = rng.permutation(np.c_[np.arange(1024), 1023 - np.arange(1024)].astype(float))
    code = _morton_code(z)
    levels = (z * 128 // 1024).astype(np.uint64)  # each column's quantile level, 7 bits
    expected = np.zeros(1024, dtype=np.uint64)
    for bit in range(6, -1, -1):
        for j in range(2):
            expected = (expected << np.uint64(1)) | ((levels[:, j] >> np.uint64(bit)) & 1)
    assert np.array_equal(code, expected)


def test_level_over_null_draws_and_power_on_an_edge():
    """20 draws of a chain at 10,000 rows: at a level of 0.05, three or more rejections have
    a chance of 0.08; a null whose smooth part of Z were left in the features would be
    rejected every time. The same chain with an edge X -> Y is found."""
    rng = np.random.default_rng(0)
    p_values = [asymptotic_conditional_test(*chain(10_000, rng), seed)[1] for seed in range(20)]
    assert sum(p <= 0.05 for p in p_values) <= 2
    statistic, p_value, null_mean = asymptotic_conditional_test(*chain(10_000, rng, 0.1), 0)
    assert p_value < 1e-6 and statistic > 5 * null_mean


def test_a_relation_that_turns_with_z_is_found():
    """Y = 0.3 sign(Z) e1 + e2 with X = Z + e1: over all rows the residuals' covariance
    averages out; the features beside Z keep it."""
    rng = np.random.default_rng(1)
    z, e1, e2 = rng.normal(size=(3, 10_000))
    x, y = z + e1, 0.3 * np.sign(z) * e1 + e2
    assert asymptotic_conditional_test(x[:, None], y[:, None], z[:, None], 0)[1] < 1e-4


def test_a_spread_that_grows_with_x_only_where_z_is_positive_is_found_at_1000_rows():
    """X = Z + e1, Y = Z + e2 s with s = 1 + 0.7 (0.7 |e1| - 0.7) where Z > 0 and 1 elsewhere:
    the random frequencies spread this relation of spreads over many products, each too weak
    for the largest of 324 (10 of these 20 draws rejected before); the residuals' products at
    unit frequency, given half the largest product's level, find it in most draws."""
    rejected = 0
    for seed in range(20):
        rng = np.random.default_rng(seed)
        z, e1, e2 = rng.normal(size=(3, 1000))
        y = z + e2 * np.where(z > 0, 1 + 0.7 * (0.7 * np.abs(e1) - 0.7), 1.0)
        p_value = asymptotic_conditional_test((z + e1)[:, None], y[:, None], z[:, None], 0)[1]
        rejected += p_value <= 0.05
    assert rejected >= 15


def test_a_cosine_of_x_is_found_at_1000_rows_in_every_draw():
    """Y = Z + 0.3 cos(2 X) + e with X = Z + e1: the rebuilt sample's two random frequencies
    meet the cosine's only at times (with one draw of the frequencies, 4 of these 20 draws
    had p-values of 1.5e-5 to 8e-3); six draws, their products in one sum, meet it in
    every draw."""
    for seed in range(20):
        rng = np.random.default_rng(seed)
        z, e1, e2 = rng.normal(size=(3, 1000))
        x = z + e1
        y = z + 0.3 * np.cos(2 * x) + 0.5 * e2
        assert asymptotic_conditional_test(x[:, None], y[:, None], z[:, None], 0)[1] < 1e-8


@pytest.mark.parametrize("seed", [0, 1])
def test_residuals_times_z_find_a_slope_that_turns_with_z(monkeypatch, seed):
    """Y = 0.1 sign(Z) e1 + e2 with X = Z + e1: the residuals' own features miss it (their
    covariance averages out over Z); X's residuals times the group's mean Z against Y's
    residuals carry it."""
    rng = np.random.default_rng(seed)
    z, e1, e2 = rng.normal(size=(3, 10_000))
    x, y, z = (z + e1)[:, None], (0.1 * np.sign(z) * e1 + e2)[:, None], z[:, None]
    monkeypatch.setattr(grouped_covariance, "FREQUENCIES", {"residuals": 3})
    assert asymptotic_conditional_test(x, y, z, seed)[1] > 0.1
    monkeypatch.setattr(grouped_covariance, "FREQUENCIES", {"residuals": 3, "times Z": 3})
    assert asymptotic_conditional_test(x, y, z, seed)[1] < 1e-6


def test_the_scorer_says_which_test_it_ran():
    rng = np.random.default_rng(2)
    x, y, z = chain(ASYMPTOTIC_ROWS, rng, direct=0.2)
    result = DependenceScorer("dcor", max_samples=None, random_state=0).test(x, y, Z=z)
    assert result.method == "asymptotic, random frequencies" and result.n_permutations == 0
    assert 0 < result.null_mean < result.statistic <= 1 and result.pvalue < 1e-6
    squared = DependenceScorer("dcor_sq", max_samples=None, random_state=0).test(x, y, Z=z)
    assert squared.statistic == pytest.approx(result.statistic**2)
    below = DependenceScorer("dcor", max_samples=ASYMPTOTIC_ROWS - 1, random_state=0)
    assert below.test(x, y, Z=z, n_permutations=19).method == "local permutation"


@pytest.mark.filterwarnings("error")
def test_a_constant_sample_is_independent_without_warnings():
    rng = np.random.default_rng(3)
    x, y, z = chain(ASYMPTOTIC_ROWS, rng)
    result = DependenceScorer("dcor", max_samples=None, random_state=0).test(
        np.ones_like(x), y, Z=z
    )
    assert (result.statistic, result.pvalue, result.null_mean) == (0.0, 1.0, 0.0)


def test_a_workspace_left_by_another_test_gives_the_same_test():
    """A search's tests reuse one workspace's arrays one after the other: what the last
    test left in them must not reach the next (each array is written whole before it is
    read), and the arrays are kept."""
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(1000, 2))
    X = np.sin(Z[:, :1]) + 0.5 * rng.normal(size=(1000, 1))
    Y = Z[:, 1:] ** 2 + np.cos(2 * X) + 0.5 * rng.normal(size=(1000, 1))
    W = rng.standard_t(3, size=(1000, 1))
    given = grouped_covariance.GroupedConditioning(Z, 0)
    alone = given.test(*given.prepared(np.hstack([X, Y]), 1))
    workspace = Workspace()
    other = given.test(*given.prepared(np.hstack([W, Z[:, :1]]), 1), workspace)
    kept = {name: array.ctypes.data for name, array in workspace.arrays.items()}
    again = given.test(*given.prepared(np.hstack([X, Y]), 1), workspace)
    assert again == alone != other
    assert alone[1] < 1e-6  # the cosine of X is found
    assert {name: array.ctypes.data for name, array in workspace.arrays.items()} == kept
