"""DependenceScorer.test(X, Y, Z=...): the conditional independence test."""

import numpy as np
import pytest

from sklearn_adm import DependenceScorer
from sklearn_adm.independence._conditional import (
    _ridge_loo,
    linear_within,
    local_cells,
    random_unions,
    smooth_regression,
)
from sklearn_adm.independence._distance import blockwise_distance_correlation
from sklearn_adm.independence._permutation import group_permutations, held_out_apart
from tests._helpers import chain

pytestmark = pytest.mark.numerics


def test_a_chain_is_dependent_and_independent_given_its_middle():
    """X -> Z -> Y: X and Y are dependent, and independent given Z; with an edge X -> Y
    they stay dependent given Z."""
    rng = np.random.default_rng(0)
    scorer = DependenceScorer("dcor", random_state=0)
    x, y, z = chain(600, rng)
    assert scorer.test(x, y).pvalue < 0.01
    assert scorer.test(x, y, Z=z).pvalue > 0.1
    x, y, z = chain(600, rng, direct=0.4)
    assert scorer.test(x, y, Z=z).pvalue < 0.01


def test_the_learned_conditional_test_finds_an_edge_and_not_a_chain():
    rng = np.random.default_rng(1)
    scorer = DependenceScorer("adm", random_state=0, critic_params={"max_iter": 500})
    # a null: at a level of 0.06 (100 draws of this chain), three or more rejections of
    # five draws have a chance of 0.002; a broken level (0.5) gives them half the time
    p_values = np.array(
        [scorer.test(x, y, Z=z).pvalue for x, y, z in [chain(800, rng) for _ in range(5)]]
    )
    assert (p_values <= 0.05).sum() <= 2
    x, y, z = chain(800, rng, direct=0.4)
    result = scorer.test(x, y, Z=z)
    assert result.pvalue < 0.01 and result.statistic > result.null_mean


def turning_with_z(n, rng, relation):
    """X = Z + e; Y's relation to X changes with Z, and averages out over Z."""
    z, e1, e2 = rng.normal(size=(3, n))
    x = z + e1
    if relation == "cos":  # Y's residual given Z is cos(2 Z + 2 e1) less its mean
        y = z + 0.6 * np.cos(2 * x) + 0.5 * e2
    else:  # the slope of Y on X's residual is the sign of Z
        y = 0.5 * np.sign(z) * e1 + e2
    return x[:, None], y[:, None], z[:, None]


@pytest.mark.parametrize("relation", ["cos", "sign"])
def test_dependence_that_turns_with_z_is_found(relation):
    """Tested over all rows, the residuals' dependence averages out (the issue's "dcor"
    rejected 0.17 of such draws at 600 rows, KCI 1.00); within blocks of nearly equal Z it
    holds still. Given Z alone, the same X is independent of Y."""
    rng = np.random.default_rng(3)
    x, y, z = turning_with_z(600, rng, relation)
    for metric in ("dcor", "adm"):
        assert DependenceScorer(metric, random_state=0).test(x, y, Z=z).pvalue < 0.01
    y_alone = z[:, 0] + rng.normal(size=600)
    assert DependenceScorer("dcor", random_state=0).test(x, y_alone[:, None], Z=z).pvalue > 0.05


def test_blockwise_distance_correlation_is_the_mean_of_the_blocks_dcor():
    import dcor

    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(50, 2)), rng.normal(size=(50, 1))
    Y[:20] += X[:20, :1] ** 2
    blocks = np.repeat([2, 0, 1], [20, 16, 14])
    groups = np.arange(50) // 4  # within the blocks
    orders = group_permutations(50, groups, 5, np.random.RandomState(0))
    observed, permuted = blockwise_distance_correlation(X, Y, blocks, orders)

    def mean_over_blocks(y):
        return np.mean(
            [dcor.distance_correlation_sqr(X[blocks == b], y[blocks == b]) for b in range(3)]
        )

    np.testing.assert_allclose(observed, mean_over_blocks(Y), rtol=1e-10)
    np.testing.assert_allclose(
        permuted, [mean_over_blocks(Y[order]) for order in orders], rtol=1e-10
    )
    # a block where one sample is constant measures nothing and counts for nothing
    Y[blocks == 0] = 1.0
    alone = blockwise_distance_correlation(X, Y, blocks, orders[:1])[0]
    two = [dcor.distance_correlation_sqr(X[blocks == b], Y[blocks == b]) for b in (1, 2)]
    np.testing.assert_allclose(alone, np.mean(two), rtol=1e-10)


def normalised_hsic(x, y):
    """HSIC of Gaussian kernels of width the median distance, over the two samples' own
    HSIC (Gretton et al. 2005), written out from its definition."""

    def centred_kernel(a):
        squares = ((a[:, None, :] - a[None, :, :]) ** 2).sum(axis=-1)
        width = np.median(squares[np.triu_indices(len(a), 1)])
        H = np.eye(len(a)) - 1 / len(a)
        return H @ np.exp(-squares / width) @ H

    K, L = centred_kernel(x), centred_kernel(y)
    return np.sum(K * L) / np.sqrt(np.sum(K * K) * np.sum(L * L))


def test_blockwise_gaussian_correlation_is_the_mean_of_the_blocks_hsic():
    rng = np.random.default_rng(1)
    X, Y = rng.normal(size=(48, 2)), rng.normal(size=(48, 1))
    Y[:24] += np.cos(3 * X[:24, :1])  # an oscillation in the first block
    blocks = np.repeat([0, 1], 24)
    orders = group_permutations(48, np.arange(48) // 6, 4, np.random.RandomState(0))
    observed, permuted = blockwise_distance_correlation(X, Y, blocks, orders, kernel="gaussian")

    def mean_over_blocks(y):
        return np.mean([normalised_hsic(X[blocks == b], y[blocks == b]) for b in range(2)])

    np.testing.assert_allclose(observed, mean_over_blocks(Y), rtol=1e-10)
    np.testing.assert_allclose(
        permuted, [mean_over_blocks(Y[order]) for order in orders], rtol=1e-10
    )


def test_held_out_rows_are_shuffled_among_themselves_within_groups():
    groups = np.repeat(np.arange(5), 8)
    held_out = np.arange(0, 40, 2)
    orders = held_out_apart(groups, held_out, 30, np.random.RandomState(0))
    is_held_out = np.isin(np.arange(40), held_out)
    assert (groups[orders] == groups).all()
    assert (is_held_out[orders] == is_held_out).all()
    assert (orders != np.arange(40)).mean() > 0.5  # they do shuffle


def test_random_unions_join_whole_blocks():
    blocks = np.repeat(np.arange(40), 25)  # 1,000 rows
    unions = random_unions(blocks, 250, np.random.RandomState(0))
    assert len(np.unique(unions)) == 4
    assert all(len(np.unique(unions[blocks == b])) == 1 for b in range(40))


def test_level_is_exact_for_a_discrete_conditioning_set():
    """Z with three values drives X and Y; given Z they are independent. Each group holds one
    value of Z, so the permutations give the null's distribution: the p-values of 60 draws
    are uniform (none below 0.01, about 5 % below 0.05), and the test without Z rejects."""
    rng = np.random.default_rng(2)
    scorer = DependenceScorer("pearson", random_state=0)
    p_values, unconditional = [], []
    for _ in range(60):
        z = rng.integers(0, 3, size=300).astype(float)[:, None]
        x = np.exp(z) + rng.normal(size=(300, 1))
        y = z**2 + rng.normal(size=(300, 1))
        p_values.append(scorer.test(x, y, n_permutations=99, Z=z).pvalue)
        unconditional.append(scorer.test(x, y, n_permutations=99).pvalue)
    p_values = np.array(p_values)
    assert np.mean(p_values <= 0.05) <= 0.1 and np.mean(p_values <= 0.5) > 0.3
    assert max(unconditional) <= 0.01


def test_permutations_move_rows_within_their_group_only():
    rng = np.random.RandomState(0)
    groups = np.array([2, 0, 2, 1, 0, 2, 1, 2])
    orders = group_permutations(len(groups), groups, 50, rng)
    assert all(sorted(order) == list(range(8)) for order in orders)
    assert (groups[orders] == groups).all()
    assert len({tuple(order) for order in orders}) > 10  # they do shuffle


def test_groups_hold_nearby_rows_of_one_fold():
    rng = np.random.default_rng(0)
    z = rng.uniform(size=(400, 1))
    folds = np.arange(400) % 2
    groups, blocks = local_cells(z, folds, 0)
    for group in np.unique(groups):
        rows = groups == group
        assert len(np.unique(folds[rows])) == 1 and len(np.unique(blocks[rows])) == 1
        assert 1 <= rows.sum() <= 10 and np.ptp(z[rows]) < 0.15
    assert np.median(np.bincount(groups)) == 8
    for block in np.unique(blocks):
        rows = blocks == block
        assert len(np.unique(folds[rows])) == 1
        assert 60 <= rows.sum() <= 70 and np.ptp(z[rows]) < 0.6
    # a discrete Z: one group per value and fold
    z = rng.integers(0, 4, size=(400, 1)).astype(float)
    groups, blocks = local_cells(z, folds, 0)
    assert all(len(np.unique(z[groups == g])) == 1 for g in np.unique(groups))
    assert all(len(np.unique(z[blocks == b])) == 1 for b in np.unique(blocks))
    assert len(np.unique(groups)) == 8  # one per value and fold
    assert np.bincount(blocks).max() <= 128  # a value's 50 rows: one block


def test_many_rows_of_several_columns_of_z_are_cut_at_medians(monkeypatch):
    """Beyond KMEANS_ROWS rows a multi-column Z's cells are a k-d tree's leaves: between 0.75
    and 1.5 times the rows asked for, each group inside one block (the same cuts, fewer of
    them), and tight in every column."""
    from sklearn_adm.independence import _conditional

    monkeypatch.setattr(_conditional, "KMEANS_ROWS", 100)
    rng = np.random.default_rng(0)
    z = rng.uniform(size=(2000, 3))
    folds = np.arange(2000) % 2
    groups, blocks = local_cells(z, folds, 0)
    sizes = np.bincount(groups)
    assert 6 <= sizes.min() and sizes.max() <= 11 and 7 <= sizes.mean() <= 9
    assert 48 <= np.bincount(blocks).min() and np.bincount(blocks).max() <= 95
    for group in np.unique(groups):
        rows = groups == group
        assert len(np.unique(blocks[rows])) == 1 and len(np.unique(folds[rows])) == 1
        assert np.ptp(z[rows], axis=0).max() < 0.5
    assert np.mean([np.ptp(z[groups == g], axis=0).max() for g in np.unique(groups)]) < 0.25


def test_within_group_linear_fit_removes_a_local_slope():
    rng = np.random.default_rng(0)
    z = rng.uniform(size=(40, 1))
    groups = np.arange(40) // 8
    residuals = linear_within(3 * z + groups[:, None], z, groups)
    np.testing.assert_allclose(residuals, 0, atol=1e-12)


def test_leave_one_out_errors_are_those_of_refits():
    from sklearn.linear_model import Ridge

    rng = np.random.default_rng(0)
    features, targets = rng.normal(size=(40, 6)), rng.normal(size=(40, 2))
    coefficients, errors = _ridge_loo(
        features - features.mean(axis=0), targets - targets.mean(axis=0), np.array([3.0])
    )
    left_out = [
        Ridge(alpha=3.0)
        .fit(np.delete(features, i, 0), np.delete(targets, i, 0))
        .predict(features[i : i + 1])[0]
        - targets[i]
        for i in range(40)
    ]
    np.testing.assert_allclose(errors, np.mean(np.square(left_out), axis=0))
    np.testing.assert_allclose(coefficients.T, Ridge(alpha=3.0).fit(features, targets).coef_)


def test_regression_on_z_recovers_smooth_functions_of_two_columns():
    # at 250 rows, noise 0.3: gradient-boosted trees miss these by 0.13 (root mean square)
    rng = np.random.default_rng(0)

    def truth(z):
        return np.c_[np.tanh(z.sum(axis=1)), z[:, 0] * z[:, 1]]

    z, z_new = rng.uniform(-1, 1, size=(250, 2)), rng.uniform(-1, 1, size=(1000, 2))
    predict = smooth_regression(z, truth(z) + 0.3 * rng.normal(size=(250, 2)), 0)
    error = np.sqrt(np.mean((predict(z_new) - truth(z_new)) ** 2, axis=0))
    assert np.all(error < 0.07)


@pytest.mark.filterwarnings("error")
def test_a_handful_of_rows_gives_a_p_value_without_warnings():
    # a fold of one row is fitted exactly: its leave-one-out residual is not defined
    rng = np.random.default_rng(0)
    x, y, z = rng.normal(size=(3, 3, 1))
    assert DependenceScorer("dcor", random_state=0).test(x, y, Z=z).pvalue == 1.0


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda s, a: s.test(a, Z=a), "needs Y"),
        (lambda s, a: s.test(a, a, Z=a[:50]), "X, Y and Z must have the same number of rows"),
        (
            lambda s, a: s.set_params(metric="adm", critic_params={"validation_fraction": 0}).test(
                a, a, Z=a
            ),
            r"critic_params\['validation_fraction'\] must be a float in the range \(0, 1\), got 0",
        ),
    ],
)
def test_bad_conditional_calls_are_rejected(call, message):
    a = np.random.default_rng(0).normal(size=(60, 1))
    with pytest.raises(ValueError, match=message):
        call(DependenceScorer("dcor"), a)
