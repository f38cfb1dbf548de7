"""DependenceScorer: metrics, sampling, errors, and its use as a scikit-learn scorer."""

import functools

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from sklearn import config_context
from sklearn.datasets import load_breast_cancer
from sklearn.decomposition import PCA
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.model_selection import GridSearchCV, cross_val_predict
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_adm import DependenceScorer
from sklearn_adm.metrics import distance_correlation_one_vs_rest, gradient_boosting_dependence

pytestmark = pytest.mark.numerics

ADM_BUDGET = {"max_iter": 300}


def xx2_and_noise(rng, n=2000):
    x = rng.uniform(-1, 1, size=n)
    return np.c_[x, x**2, rng.uniform(size=n)]


def test_score_is_the_mean_of_per_feature(rng):
    Z = xx2_and_noise(rng, 500)
    scorer = DependenceScorer()
    assert scorer.score(Z) == pytest.approx(scorer.per_feature(Z).mean())
    np.testing.assert_allclose(
        DependenceScorer("dcor_sq").per_feature(Z), scorer.per_feature(Z) ** 2, atol=1e-12
    )


def test_max_samples_draws_a_reproducible_subsample(rng):
    Z = xx2_and_noise(rng, 3000)
    scorer = DependenceScorer(max_samples=500, random_state=0)
    first, second = scorer.per_feature(Z), scorer.per_feature(Z)
    np.testing.assert_array_equal(first, second)
    rows = np.sort(np.random.RandomState(0).choice(3000, 500, replace=False))
    np.testing.assert_allclose(first, distance_correlation_one_vs_rest(Z[rows]))
    assert not np.allclose(first, DependenceScorer(max_samples=None).per_feature(Z))


def test_pearson_is_the_multiple_correlation(rng):
    a, b = rng.normal(size=(2, 5000))
    Z = np.c_[a, b, a + b]  # the third is a linear function of the others
    np.testing.assert_allclose(DependenceScorer("pearson").per_feature(Z), 1.0, atol=1e-6)
    pairwise = DependenceScorer("pearson").pairwise(Z)
    np.testing.assert_allclose(pairwise[0, 2], np.sqrt(0.5), atol=0.02)
    np.testing.assert_allclose(pairwise, pairwise.T)


def test_pearson_is_the_r2_of_a_linear_regression_on_the_other_columns(rng):
    """One decomposition for all columns gives each column's R^2 of the regression on the
    others; a constant column gets 0 and leaves the others' as they were."""
    from sklearn.linear_model import LinearRegression

    Z = rng.standard_t(3, size=(400, 12)) @ rng.normal(size=(12, 12))
    expected = []
    for j in range(Z.shape[1]):
        others = np.delete(Z, j, axis=1)
        expected.append(LinearRegression().fit(others, Z[:, j]).score(others, Z[:, j]))
    scorer = DependenceScorer("pearson")
    np.testing.assert_allclose(scorer.per_feature(Z) ** 2, expected, rtol=1e-10)
    with_constant = scorer.per_feature(np.c_[Z[:, :6], np.full(400, 3.0), Z[:, 6:]])
    np.testing.assert_allclose(np.delete(with_constant, 6) ** 2, expected, rtol=1e-10)
    assert with_constant[6] == 0


@pytest.mark.parametrize("metric", ["dcor", "dcor_sq", "pearson", "adm", "hgb"])
def test_constant_column_has_no_dependence(metric, rng):
    Z = np.c_[xx2_and_noise(rng, 1000), np.full(1000, 3.0)]
    scorer = DependenceScorer(metric, random_state=0, critic_params=ADM_BUDGET)
    values = scorer.per_feature(Z)
    assert values[3] == 0.0
    assert np.all(np.isfinite(values))
    pairwise = DependenceScorer(metric).pairwise(Z[:, [0, 3]]) if metric != "adm" else None
    if pairwise is not None:
        np.testing.assert_array_equal(pairwise[1], 0.0)


def test_adm_metric_reads_the_paper_hierarchy(rng):
    """About 0 for independent columns, high for (x, x^2)."""
    scorer = DependenceScorer("adm", random_state=0, critic_params=ADM_BUDGET)
    independent = scorer.per_feature(rng.uniform(size=(2000, 3)))
    assert np.all(independent < 0.05), independent
    dependent = scorer.per_feature(xx2_and_noise(rng))
    assert dependent[0] > 0.8 and dependent[1] > 0.8 and dependent[2] < 0.05, dependent


def test_adm_metric_with_a_low_rank_critic(rng):
    """critic_params reaches the critic: a rank-2 first layer still reads the hierarchy."""
    scorer = DependenceScorer(
        "adm", random_state=0, critic_params={**ADM_BUDGET, "predictor_rank": 2}
    )
    dependent = scorer.per_feature(xx2_and_noise(rng))
    assert dependent[0] > 0.8 and dependent[1] > 0.8 and dependent[2] < 0.05, dependent


def test_adm_metric_needs_probes_beyond_the_conditional_mean(rng):
    z1 = rng.uniform(-np.sqrt(3), np.sqrt(3), size=4000)
    Z = np.c_[z1, z1 * rng.standard_normal(4000)]  # mean-independent both ways, yet dependent
    with_probes = DependenceScorer("adm", random_state=0, critic_params=ADM_BUDGET)
    without = DependenceScorer("adm", random_state=0, critic_params={**ADM_BUDGET, "probes": False})
    assert np.all(with_probes.per_feature(Z) > 0.1)
    assert np.all(without.per_feature(Z) < 0.03)


def test_adm_pairwise_finds_the_dependent_pair(rng):
    scorer = DependenceScorer("adm", random_state=0, critic_params=ADM_BUDGET)
    pairwise = scorer.pairwise(xx2_and_noise(rng))
    assert pairwise[0, 1] > 0.8 and pairwise[0, 2] < 0.05 and pairwise[1, 2] < 0.05
    np.testing.assert_array_equal(pairwise, pairwise.T)


def test_permutation_test_and_floor(rng):
    Z = xx2_and_noise(rng, 300)
    result = DependenceScorer("dcor_sq", random_state=0).test(Z, n_permutations=50)
    p_values, floor = result.pvalue, result.null_mean
    assert p_values[0] == p_values[1] == pytest.approx(1 / 51)  # beyond every permutation
    assert p_values[2] > 0.05
    observed = DependenceScorer("dcor_sq").per_feature(Z)
    assert np.all(floor > 0) and floor[2] == pytest.approx(observed[2], rel=1.0)


def test_floor_grows_as_samples_shrink():
    """The V-statistic's upward bias (issue figures: ~0.006 at n=3000, 32 columns)."""
    rng = np.random.default_rng(0)
    floors = []
    for n in (300, 1200):
        result = DependenceScorer("dcor_sq", random_state=0).test(
            rng.uniform(size=(n, 8)), n_permutations=10
        )
        floors.append(result.null_mean.mean())
    assert floors[0] > 2 * floors[1]


@pytest.mark.parametrize(
    ("Z", "params", "message"),
    [
        (np.zeros((5, 1)), {}, "1 feature"),
        (np.eye(3), {"metric": "spearman"}, "'metric' parameter of DependenceScorer"),
        (np.eye(3), {"max_samples": 1}, "'max_samples' parameter"),
        (np.eye(3), {"metric": "adm", "critic_params": {"hidden": 3}}, "Unknown critic_params"),
    ],
)
def test_bad_input_gets_a_clear_error(Z, params, message):
    with pytest.raises(ValueError, match=message):
        DependenceScorer(**params).per_feature(Z)


def test_learned_test_finds_a_noisy_ring_by_the_spreads_over_all_rows():
    """On a ring whose noise is 0.6 times its radius (1,000 rows), the critic and the
    neighbours on the held-out half found 7 of 20 draws; the spreads' correlation over all
    rows finds every one. It is exact: the training rows are permuted among themselves."""
    from sklearn_adm.independence._critic_statistic import _magnitude_null

    for seed in (0, 1):
        rng = np.random.default_rng(seed)
        angle = rng.uniform(0, 2 * np.pi, 1000)
        x = np.cos(angle) + 0.6 * rng.normal(size=1000)
        y = np.sin(angle) + 0.6 * rng.normal(size=1000)
        result = DependenceScorer("adm", random_state=seed).test(x, y, n_permutations=99)
        assert result.pvalue <= 0.02
    orders = np.array([rng.permutation(1000) for _ in range(99)])
    observed, permuted = _magnitude_null(x[:, None], y[:, None], orders)
    spread_x, spread_y = np.abs(x - np.median(x)), np.abs(y - np.median(y))
    assert observed == pytest.approx(np.corrcoef(spread_x, spread_y)[0, 1] ** 2)
    assert observed > permuted.max()


def test_test_rejects_the_boosted_trees():
    with pytest.raises(ValueError, match="test\\(\\) supports"):
        DependenceScorer("hgb").test(np.eye(3))


@pytest.mark.parametrize("two_samples", [False, True])
def test_learned_test_holds_its_level_on_independent_data(two_samples):
    """The critic is trained once; the permutations shuffle rows it never saw, so under
    independence the p-values are uniform: about 5 % below 0.05, mean about 0.5."""
    draws = {
        "uniform": lambda rng, n: rng.uniform(size=n),
        "exponential": lambda rng, n: rng.exponential(size=n),
        "bimodal": lambda rng, n: rng.normal(size=n) + 3 * rng.integers(0, 2, size=n),
    }
    p_values = []
    for seed in range(48):
        rng = np.random.default_rng(seed)
        draw = list(draws.values())[seed % 3]
        X, Y = draw(rng, 200), draw(rng, 200)
        scorer = DependenceScorer("adm", random_state=seed, critic_params={"max_iter": 100})
        if two_samples:
            p_values.append(scorer.test(X, Y, n_permutations=39).pvalue)
        else:
            p_values.extend(scorer.test(np.c_[X, Y], n_permutations=39).pvalue)
    p_values = np.array(p_values)
    # bounds that a test at its level breaks once in 10,000 draws (another CPU's rounding
    # trains other critics: other draws): the binomial tail of the rejections, and four
    # standard errors of the mean of p-values uniform on {1/40, ..., 40/40}
    n = len(p_values)
    assert (p_values <= 0.05).sum() <= scipy.stats.binom.isf(1e-4, n, 0.05)
    uniform = np.arange(1, 41) / 40
    assert abs(p_values.mean() - uniform.mean()) < 4 * uniform.std() / np.sqrt(n)


def test_learned_test_finds_a_wiggly_relation_that_pearson_misses(rng):
    x = rng.uniform(-1, 1, size=400)
    y = np.cos(4 * np.pi * x) + 0.3 * rng.normal(size=400)  # uncorrelated with x
    result = DependenceScorer("adm", random_state=0).test(x, y, n_permutations=99)
    assert result.pvalue == pytest.approx(1 / 100) and result.statistic > 0.05  # floor ~0.005
    assert DependenceScorer("pearson", random_state=0).test(x, y, n_permutations=99).pvalue > 0.05


def test_two_sample_test_is_dcor_test(rng):
    import dcor

    X = rng.normal(size=(150, 3))
    Y = X[:, :1] ** 2 + 0.5 * rng.normal(size=(150, 1))
    result = DependenceScorer("dcor", random_state=0).test(X, Y, n_permutations=99)
    assert result.statistic == pytest.approx(dcor.distance_correlation(X, Y), rel=1e-9)
    assert result.pvalue == pytest.approx(1 / 100)
    squared = DependenceScorer("dcor_sq", random_state=0).test(X, Y, n_permutations=9).statistic
    assert squared == pytest.approx(result.statistic**2)
    # on independent samples the p-value is dcor's, which ranks the same permutations
    Y = rng.normal(size=(150, 2))
    for seed in range(3):
        result = DependenceScorer("dcor", random_state=seed).test(X, Y, n_permutations=99)
        reference = dcor.independence.distance_covariance_test(
            X, Y, num_resamples=99, random_state=seed
        )
        assert result.pvalue == reference.pvalue
        assert 0.0 < result.null_mean < result.statistic + 0.1


def test_two_sample_pearson_is_the_first_canonical_correlation(rng):
    X = rng.normal(size=(500, 2))
    Y = np.c_[X @ [1.0, -2.0] + rng.normal(size=500), rng.normal(size=500)]
    result = DependenceScorer("pearson", random_state=0).test(X, Y)
    explained = np.corrcoef(X @ [1.0, -2.0], Y[:, 0])[0, 1]
    assert result.statistic == pytest.approx(explained, abs=0.02) and result.pvalue < 0.01


@pytest.mark.parametrize(
    ("X", "Y", "params", "message"),
    [
        (np.zeros((10, 1)), np.zeros((9, 1)), {}, "same number of rows"),
        (np.zeros((10, 1)), np.full((10, 1), np.nan), {}, "NaN"),
        (np.arange(12.0), np.arange(12.0) ** 2, {"metric": "adm"}, "rows the critic does not"),
    ],
)
def test_two_sample_bad_input_gets_a_clear_error(X, Y, params, message):
    with pytest.raises(ValueError, match=message):
        DependenceScorer(**params).test(X, Y)


@functools.cache
def _unscaled_answer(metric):
    """The (x, x^2, noise) sample and each metric's answer on it, shared by both scales."""
    Z = xx2_and_noise(np.random.default_rng(0), 800)
    return Z, DependenceScorer(metric, random_state=0, critic_params=ADM_BUDGET).per_feature(Z)


@pytest.mark.parametrize("metric", ["dcor", "dcor_sq", "pearson", "adm", "hgb"])
@pytest.mark.parametrize("factor", [1e150, 1e-150])
def test_any_finite_scale_gives_the_same_answer(metric, factor):
    """Every metric is scale invariant; huge or tiny entries must not overflow or underflow
    into zeros or NaN (1e150 used to give all zeros for dcor and NaN for adm)."""
    Z, reference = _unscaled_answer(metric)
    scorer = DependenceScorer(metric, random_state=0, critic_params=ADM_BUDGET)
    if metric != "pearson":  # the (x, x^2) pair is uncorrelated: only pearson misses it
        assert reference[:2].min() > 0.1
    np.testing.assert_allclose(scorer.per_feature(Z * factor), reference, atol=0.02)
    assert np.all(np.isfinite(scorer.pairwise(Z[:, :2] * factor)))


@pytest.mark.parametrize("metric", ["dcor", "pearson"])
def test_two_samples_of_far_apart_scales_are_tested_as_at_one_scale(metric):
    """X of 1e200 beside Y of 1: each sample is brought to its own scale, so that Y's
    squares do not underflow to 0 (a statistic of 0 and a p-value of 1 before)."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(400, 1))
    y = x + 0.5 * rng.normal(size=(400, 1))
    scorer = DependenceScorer(metric, max_samples=None, random_state=0)
    reference = scorer.test(x, y, n_permutations=50)
    for X, Y in [(x * 1e200, y), (x, y * 1e-200)]:
        result = scorer.test(X, Y, n_permutations=50)
        assert result.statistic == pytest.approx(reference.statistic, rel=1e-9)
        assert result.pvalue == reference.pvalue < 0.05


def test_hgb_judge_reads_mean_and_spread_dependence(rng):
    """Trees see x from x^2 only through the square; independent columns read about 0."""
    x = rng.uniform(-1, 1, size=3000)
    # mean-independent of x, not independent: its spread grows with |x|
    spread = rng.uniform(-1, 1, size=3000) * (0.1 + np.abs(x))
    Z = np.c_[x, x**2, spread, rng.uniform(size=3000)]
    judged = gradient_boosting_dependence(Z, random_state=0)
    assert judged[1, 0] > 0.95  # x^2 is a function of x
    assert judged[0, 0] < 0.05 and judged[0, 1] > 0.95  # x's sign is lost, its square is not
    assert judged[2, 0] < 0.05 and judged[2, 1] > 0.1  # heteroscedastic: only the square
    assert judged[3].max() < 0.03
    scorer = DependenceScorer("hgb", random_state=0)
    np.testing.assert_allclose(scorer.per_feature(Z)[3], 0.0, atol=0.03)


def test_hgb_judge_reads_repeated_rows_as_dependence(rng):
    """As documented: held-out copies of training rows are atoms the trees predict exactly."""
    Z = rng.standard_normal((200, 4))
    scorer = DependenceScorer("hgb", random_state=0)
    assert scorer.per_feature(Z).max() < 0.1
    assert scorer.per_feature(np.repeat(Z, 3, axis=0)).min() > 0.5


def test_grid_search_without_y_prefers_less_dependent_representations(rng):
    x = rng.uniform(-1, 1, size=600)
    X = np.c_[x, x**2, rng.uniform(size=(600, 2))]
    search = GridSearchCV(
        make_pipeline(StandardScaler(), PCA()),
        {"pca__n_components": [2, 4]},
        scoring=DependenceScorer(),
        cv=3,
    ).fit(X)
    assert np.all(search.cv_results_["mean_test_score"] < 0)
    assert search.best_params_ in ({"pca__n_components": 2}, {"pca__n_components": 4})


def test_pipeline_ending_in_a_classifier_scores_the_steps_before(rng):
    X = rng.normal(size=(200, 4))
    y = (X[:, 0] > 0).astype(int)
    pipeline = make_pipeline(PCA(n_components=3), LogisticRegression()).fit(X, y)
    expected = -DependenceScorer().score(pipeline[:-1].transform(X))
    assert DependenceScorer()(pipeline, X, y) == pytest.approx(expected)


def test_learned_test_finds_sixteen_periods_in_300_rows():
    """hyppo's sin(16 pi x) with its noise, where distance correlation has almost no power at
    this size: the nearest-neighbour predictions, their number learned, find it."""
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, size=300)
    y = np.sin(16 * np.pi * x) + 0.5 * rng.normal(size=300)
    result = DependenceScorer("adm", random_state=0).test(x, y, n_permutations=99)
    assert result.pvalue == pytest.approx(1 / 100)
    assert DependenceScorer("dcor", random_state=0).test(x, y, n_permutations=99).pvalue > 0.05


def test_learned_test_is_not_drowned_by_dependence_inside_a_sample():
    """Y's two columns predict each other in every permutation; the X-Y dependence has to
    show over that (a plain maximum over the columns' correlations did not: p = 0.33)."""
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, size=(400, 3))
    y = x[:, :1] ** 2 + 0.5 * rng.normal(size=(400, 1))
    Y = np.c_[y, y + 0.02 * rng.normal(size=(400, 1))]
    scorer = DependenceScorer("adm", random_state=0, critic_params={"max_iter": 500})
    assert scorer.test(x, Y, n_permutations=99).pvalue == pytest.approx(1 / 100)


def _held_out_linear_r2(Z):
    """Each column's 5-fold cross-validated R^2 from a linear regression on the others."""
    r2 = []
    for j in range(Z.shape[1]):
        others = np.delete(Z, j, axis=1)
        predicted = cross_val_predict(LinearRegression(), others, Z[:, j], cv=5)
        r2.append(1 - np.mean((Z[:, j] - predicted) ** 2) / Z[:, j].var())
    return np.array(r2)


@pytest.mark.parametrize("dataset", ["linear300", "linear1000", "breast_cancer"])
def test_learned_estimate_is_not_below_a_held_out_linear_fit(dataset):
    """The squared maximal correlation is at least the linear R^2: on nearly linear data the
    learned estimate stays within noise of a held-out linear fit (on 300 Gaussian rows it
    read 0.75 against 0.99 before the linear floor; breast cancer, raw units, 0.30 below on
    its worst column)."""
    if dataset == "breast_cancer":
        Z = load_breast_cancer().data
    else:
        n = int(dataset.removeprefix("linear"))
        rng = np.random.default_rng(n)
        Z = rng.normal(size=(n, 8)) @ rng.normal(size=(8, 8))
    learned = DependenceScorer("adm", random_state=0).per_feature(Z)
    assert (learned >= _held_out_linear_r2(Z) - 0.05).all()


def test_learned_estimate_stays_near_zero_under_independence():
    Z = np.random.default_rng(0).normal(size=(500, 8))
    assert DependenceScorer("adm", random_state=0).per_feature(Z).max() < 0.05


def test_results_keep_the_names_of_a_dataframe():
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, 300)
    frame = pd.DataFrame({"dose": x, "response, squared": x**2, "noise": rng.normal(size=300)})
    scorer = DependenceScorer(random_state=0)
    per_feature = scorer.per_feature(frame)
    assert isinstance(per_feature, pd.Series)
    assert list(per_feature.index) == list(frame.columns)
    np.testing.assert_allclose(per_feature.to_numpy(), scorer.per_feature(frame.to_numpy()))
    assert per_feature["noise"] < 0.2 < per_feature["dose"]
    pairwise = scorer.pairwise(frame)
    assert list(pairwise.index) == list(pairwise.columns) == list(frame.columns)
    assert pairwise.loc["dose", "response, squared"] > 0.4
    result = scorer.test(frame, n_permutations=20)
    p_values, floor = result.pvalue, result.null_mean
    assert list(p_values.index) == list(floor.index) == list(frame.columns)
    assert p_values["dose"] < 0.05
    assert isinstance(scorer.per_feature(frame.to_numpy()), np.ndarray)


def test_pandas_output_configuration_names_the_columns():
    Z = np.random.default_rng(0).normal(size=(100, 3))
    with config_context(transform_output="pandas"):
        per_feature = DependenceScorer().per_feature(Z)
    assert list(per_feature.index) == ["x0", "x1", "x2"]


def test_a_test_result_names_its_parts_in_both_forms_and_is_no_tuple():
    """The same attribute means the same thing in the one-matrix and two-sample forms, read
    by name only."""
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, 300)
    Z = np.c_[x, x**2, rng.normal(size=300)]
    columns = DependenceScorer("dcor_sq", random_state=0).test(Z, n_permutations=19)
    np.testing.assert_allclose(columns.statistic, DependenceScorer("dcor_sq").per_feature(Z))
    assert columns.pvalue.shape == columns.null_mean.shape == (3,)
    assert columns.n_permutations == 19
    with pytest.raises(TypeError):
        p_values, floor = columns
    two = DependenceScorer("pearson", random_state=0).test(x, x**3, n_permutations=19)
    assert two.statistic > 0.9 and two.pvalue == pytest.approx(1 / 20)
    assert 0 < two.null_mean < 0.2  # the permutations' mean canonical correlation
    with pytest.raises(TypeError):
        two[1]


def test_two_one_dimensional_samples_are_tested_by_sorting_as_by_the_engine(rng):
    """Sorting and the engine's n x n matrices read the same statistic for every one of the
    same permutations (dcor's test's, for the same seed), to 1e-10."""
    from sklearn_adm.independence._distance import permuted_distance_correlation
    from sklearn_adm.independence._permutation import inverse_permutations
    from sklearn_adm.independence._sorting import sorted_permutations

    x = rng.uniform(-1, 1, size=1500)
    y = np.round(np.cos(4 * x) + rng.normal(size=1500), 1)  # ties in y
    orders = list(inverse_permutations(1500, 49, np.random.RandomState(0)))
    assert [len(block) for block in orders] == [16, 16, 16, 1]
    fast, permuted = sorted_permutations(x, y, 50)
    fast_permuted = permuted(iter(orders))
    engine, engine_permuted = permuted_distance_correlation(
        x[:, None], y[:, None], np.concatenate(orders)
    )
    assert fast == pytest.approx(engine, abs=1e-10)
    np.testing.assert_allclose(fast_permuted, engine_permuted, rtol=0, atol=1e-10)
    result = DependenceScorer("dcor", max_samples=None, random_state=0).test(x, y, 49)
    assert result.pvalue == 0.02 and result.method == "permutation"  # 1 / (49 + 1)
    assert result.null_mean == pytest.approx(np.sqrt(engine_permuted).mean(), abs=1e-10)


def test_multivariate_samples_beyond_the_engine_rows_are_projected(rng, monkeypatch):
    """Beyond the rows where the two n x n matrices would pass 1 GiB, the multivariate test
    reads random one-dimensional projections by sorting: memory linear in the rows, the
    level kept and a dependence of one column on another's square found."""
    from sklearn_adm.independence import _distance_statistic

    monkeypatch.setattr(_distance_statistic, "ENGINE_ROWS", 300)  # the same path, on small data
    X, Y = rng.normal(size=(800, 3)), rng.normal(size=(800, 2))
    scorer = DependenceScorer("dcor", max_samples=None, random_state=0)
    null = scorer.test(X, Y, n_permutations=99)
    assert null.method == "permutation, random projections"
    assert null.pvalue > 0.05 and 0 < null.statistic < 0.2
    Y[:, 1] += X[:, 2] ** 2
    found = scorer.test(X, Y, n_permutations=99)
    assert found.pvalue == 0.01 and found.statistic > 2 * found.null_mean
    small = DependenceScorer("dcor", max_samples=None, random_state=0).test(X[:200], Y[:200])
    assert small.method == "permutation"  # below the rows: the full statistic
