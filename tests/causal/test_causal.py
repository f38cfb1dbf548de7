"""sklearn_adm.causal: many conditional tests on one table, and the adapters that put them in
causal-learn, pgmpy and tigramite."""

import numpy as np
import pytest
from scipy import stats

from sklearn_adm import DependenceScorer
from sklearn_adm.causal import ConditionalIndependence
from sklearn_adm.independence import _conditional, _grouped_covariance

pytestmark = pytest.mark.numerics


def chain(n, rng):
    """x -> z -> y, each through a nonlinear function, and w independent of all: x and y
    depend on each other, and not given z."""
    x = rng.normal(size=n)
    z = np.sin(2 * x) + 0.4 * rng.normal(size=n)
    y = z**2 + 0.4 * rng.normal(size=n)
    return np.c_[x, y, z, rng.normal(size=n)]


def counting(monkeypatch, module, name):
    """Count the calls of ``module.name``."""
    calls = []
    original = getattr(module, name)

    def counted(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


@pytest.mark.parametrize("n", [600, 12_000], ids=["permutations", "asymptotic"])
def test_each_test_is_the_scorers_test_and_the_work_on_z_is_done_once(n, monkeypatch):
    data = chain(n, np.random.default_rng(0))
    cells = counting(monkeypatch, _conditional, "local_cells")
    groups = counting(monkeypatch, _grouped_covariance, "groups_along")
    tests = ConditionalIndependence(data, early_stop=None, screen_rows=None, random_state=3)
    scorer = DependenceScorer(max_samples=None, random_state=3)
    for x, y in [(0, 1), (0, 3), (1, 3)]:
        shared = tests.test(x, y, [2])
        lone = scorer.test(data[:, [x]], data[:, [y]], Z=data[:, [2]])
        # the residuals of one column or of two together differ by the BLAS's rounding
        assert shared.pvalue == pytest.approx(lone.pvalue, rel=1e-6, abs=1.5 / 201)
        assert shared.statistic == pytest.approx(lone.statistic, rel=1e-6)
        assert shared.method == lone.method
    assert len(cells) + len(groups) == 1 + 3  # the shared test's Z once, the lone tests' thrice
    assert tests.test(0, 1).pvalue < 0.01  # dependent through z
    assert tests.test(0, 1, [2]).pvalue > 0.01  # and not given z


def test_a_search_reads_the_asymptotic_null_from_asymptotic_rows():
    data = chain(2000, np.random.default_rng(0))
    asymptotic = "asymptotic, random frequencies"
    assert ConditionalIndependence(data).test(0, 1, [2]).method == asymptotic
    permuted = ConditionalIndependence(data, asymptotic_rows=None).test(0, 1, [2])
    assert permuted.method == "local permutation" and permuted.pvalue > 0.01
    # without z, x and z depend on each other beyond the chi-square bound's doubt
    assert ConditionalIndependence(data).test(0, 2).method == "asymptotic, chi-square bound"
    assert ConditionalIndependence(data, asymptotic_rows=None).test(0, 2).method == "permutation"


def test_without_z_the_limit_decides_the_clear_cases_and_the_permutations_the_rest():
    rng = np.random.default_rng(5)
    x, w = rng.normal(size=(2, 2000))
    data = np.c_[x, np.sin(2 * x) + rng.normal(size=2000), 0.1 * x + rng.normal(size=2000), w]
    tests = ConditionalIndependence(data, random_state=0)
    lone = DependenceScorer(max_samples=None, random_state=0)
    sure = tests.test(0, 1)
    assert sure.method == "asymptotic, chi-square bound" and sure.pvalue <= 1e-5
    assert sure.n_permutations == 0
    stopped = tests.test(0, 3)
    assert stopped.method == "asymptotic, gamma" and stopped.pvalue > 0.2
    # the statistic and its null mean are the lone test's (the mean: a permutation mean)
    permuted = lone.test(data[:, [0]], data[:, [3]])
    assert stopped.statistic == pytest.approx(permuted.statistic, rel=1e-9)
    assert stopped.null_mean == pytest.approx(permuted.null_mean, rel=0.1)
    weak = tests.test(0, 2)  # neither clear: the lone test's permutations, the same draws
    assert weak.method == "permutation" and weak.n_permutations == 200
    assert weak.pvalue == lone.test(data[:, [0]], data[:, [2]]).pvalue


def test_without_z_a_category_is_read_on_the_projections_of_its_permutation_test():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(8)
    codes = rng.integers(0, 3, 9000)  # beyond ENGINE_ROWS: the test reads projections
    frame = pd.DataFrame(
        {"c": pd.Categorical(codes), "x": codes + rng.normal(size=9000), "w": rng.normal(size=9000)}
    )
    tests = ConditionalIndependence(frame, random_state=0)
    sure = tests.test("c", "x")
    assert sure.method == "asymptotic, chi-square bound, random projections"
    assert sure.pvalue <= 1e-5
    # no gamma law for many columns: the permutations decide, on the same projections
    doubt = tests.test("c", "w")
    permuted = ConditionalIndependence(frame, random_state=0, asymptotic_rows=None).test("c", "w")
    assert doubt.method == permuted.method == "permutation, random projections"
    assert doubt.pvalue == permuted.pvalue and doubt.statistic == permuted.statistic


def test_without_z_a_search_keeps_its_level():
    """Under independence, at 1,000 rows (the limit first) the p-value is at most alpha at
    most alpha of the time (four binomial standard errors), for marginals of heavy and
    light tails and of two values."""
    rng = np.random.default_rng(6)
    draws = {
        "normal": lambda: rng.normal(size=(1000, 2)),
        "lognormal": lambda: rng.lognormal(size=(1000, 2)),
        "binary": lambda: rng.integers(0, 2, size=(1000, 2)).astype(float),
    }
    for draw in draws.values():
        p_values = np.array([ConditionalIndependence(draw()).pvalue(0, 1) for _ in range(150)])
        for alpha in (0.01, 0.05, 0.1, 0.3):
            assert np.mean(p_values <= alpha) <= alpha + 4 * np.sqrt(alpha * (1 - alpha) / 150)


def test_given_z_a_search_screens_on_a_sample_of_rows():
    data = chain(2400, np.random.default_rng(7))
    tests = ConditionalIndependence(data, screen_rows=1200, random_state=4)
    rows = np.sort(np.random.RandomState(4).permutation(2400)[:1200])
    on_sample = ConditionalIndependence(data[rows], random_state=4)
    clear = tests.test(0, 2, [3])  # x and z, given w, depend on each other
    assert clear.method == "asymptotic, random frequencies, on 1200 of 2400 rows"
    assert clear.pvalue <= 1e-5 and clear.pvalue == on_sample.pvalue(0, 2, [3])
    doubt = tests.test(0, 1, [2])  # x and y given z: independent, tested on every row
    assert doubt.pvalue == ConditionalIndependence(data, random_state=4).pvalue(0, 1, [2])
    assert doubt.method == "asymptotic, random frequencies" and doubt.pvalue > 0.01
    assert ConditionalIndependence(data[:2399], screen_rows=1200).test(0, 2, [3]).method == (
        "asymptotic, random frequencies"  # fewer than twice the sample's rows
    )


def test_a_cache_of_no_bytes_keeps_nothing(monkeypatch):
    data = chain(400, np.random.default_rng(0))
    cells = counting(monkeypatch, _conditional, "local_cells")
    tests = ConditionalIndependence(data, cache_bytes=0)
    kept = ConditionalIndependence(data)
    for _ in range(2):
        assert tests.test(0, 1, [2]).pvalue == kept.test(0, 1, [2]).pvalue
    assert len(cells) == 2 + 1
    assert tests.n_tests_ == 2


def test_test_pairs_is_each_pairs_test():
    data = chain(400, np.random.default_rng(1))
    tests = ConditionalIndependence(data)
    pairs = [(0, 1), (0, 3), (1, 3)]
    batch = tests.test_pairs(pairs, z=[2])
    assert [result.pvalue for result in batch] == [tests.pvalue(x, y, [2]) for x, y in pairs]


def test_early_stop_is_sequential_for_one_statistic_and_staged_for_several():
    rng = np.random.default_rng(2)
    data = chain(500, rng)
    full = ConditionalIndependence(data, early_stop=None)
    early = ConditionalIndependence(data, early_stop=0.2)
    # without z, one statistic: the test stops at the 8th permutation that reaches it (8 of
    # 40 put the first 39's p-value above 0.2), with Besag & Clifford's p-value
    for x, y in [(0, 1), (0, 3), (1, 3), (2, 3), (0, 2)]:
        drawn, complete = early.test(x, y), full.test(x, y)
        if drawn.n_permutations < 200:
            assert drawn.pvalue == 8 / drawn.n_permutations
            assert complete.pvalue >= 9 / 201  # at least 8 of the same draws reached it
        else:  # the same draws: the full test's p-value
            assert drawn.pvalue == complete.pvalue
    assert early.test(0, 2).n_permutations == 200  # strongly dependent: every permutation
    assert early.test(0, 3).n_permutations < 39  # independent: fewer than the first stage
    # given z, several statistics: the first 39 permutations, or all 200
    for x, y in [(0, 1), (3, 1), (0, 3)]:
        drawn, complete = early.test(x, y, [2]), full.test(x, y, [2])
        if drawn.n_permutations == 39:  # stopped: the first 39 permutations' p-value
            assert drawn.pvalue > 0.2 and drawn.pvalue == pytest.approx(
                round(drawn.pvalue * 40) / 40
            )
        else:
            assert drawn.n_permutations == 200 and drawn.pvalue == complete.pvalue
    assert early.test(0, 1, [2]).n_permutations == 39
    assert early.test(0, 2, [3]).n_permutations == 200  # dependent given w


def test_early_stop_keeps_the_level_at_every_alpha():
    """Under independence the p-value is at most alpha at most alpha of the time, below and
    above the stopping threshold (four binomial standard errors)."""
    rng = np.random.default_rng(3)
    results = [
        ConditionalIndependence(rng.normal(size=(80, 2)), random_state=seed).test(0, 1)
        for seed in range(300)
    ]
    p_values = np.array([result.pvalue for result in results])
    for alpha in (0.05, 0.1, 0.3, 0.5):
        assert np.mean(p_values <= alpha) <= alpha + 4 * np.sqrt(alpha * (1 - alpha) / 300)
    # null tests stop early: at the 8th of L permutations reaching the statistic, L about
    # 8 / U for U uniform, 33 on average
    assert np.mean([result.n_permutations for result in results]) < 45


def test_missing_values_raise_or_are_left_out_test_by_test():
    pd = pytest.importorskip("pandas")
    data = pd.DataFrame(chain(300, np.random.default_rng(4)), columns=["x", "y", "z", "w"])
    data.loc[[3, 7], "w"] = np.nan
    with pytest.raises(ValueError, match="Variable 'w' has 2 missing values; pass missing='drop'"):
        ConditionalIndependence(data).test("x", "w")
    tests = ConditionalIndependence(data, missing="drop")
    assert tests.test("x", "y", ["z"]).n_dropped == 0  # w is not tested: every row
    dropped = tests.test("x", "w", ["z"])
    complete = ConditionalIndependence(data.dropna()).test("x", "w", ["z"])
    assert dropped.n_dropped == 2 and dropped.pvalue == complete.pvalue


def test_an_unordered_category_is_not_a_number():
    """Y is high for categories 'a' and 'c' and low for 'b': an ordering 'a' < 'b' < 'c'
    as numbers would leave a bump that a smooth regression on the codes misses less well;
    read as indicators, the category is a discrete Z and the test exact."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(5)
    n = 600
    category = rng.choice(["a", "b", "c"], size=n)
    level = np.where(category == "b", -1.0, 1.0)
    frame = pd.DataFrame(
        {
            "x": level + rng.normal(size=n),
            "y": level**3 + rng.normal(size=n),
            "c": pd.Categorical(category),
            "s": category,  # strings: categories too
        }
    )
    tests = ConditionalIndependence(frame)
    assert tests.pvalue("x", "c") < 0.01 and tests.pvalue("x", "s") < 0.01
    assert tests.pvalue("x", "y") < 0.01
    assert tests.pvalue("x", "y", ["c"]) > 0.01
    ordered = frame.assign(c=pd.Categorical(category, categories=["b", "a", "c"], ordered=True))
    assert ConditionalIndependence(ordered).pvalue("x", "c") < 0.01  # its codes, a number


def test_level_given_a_category_holds():
    """Given an unordered category the permutations stay within its values: exact."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(6)
    p_values = []
    for seed in range(40):
        category = rng.choice(list("abcd"), size=200)
        shift = pd.Series(category).map({"a": 0.0, "b": 2.0, "c": -1.0, "d": 0.5}).to_numpy()
        frame = pd.DataFrame(
            {"x": shift + rng.normal(size=200), "y": shift**2 + rng.normal(size=200)}
        ).assign(c=pd.Categorical(category))
        p_values.append(ConditionalIndependence(frame, random_state=seed).pvalue("x", "y", ["c"]))
    assert np.mean(np.array(p_values) <= 0.1) <= stats.binom(40, 0.1).isf(1e-4) / 40


@pytest.mark.parametrize(
    "params, call, message",
    [
        ({}, ("x", "q"), "Unknown variable 'q'; the data have 'x', 'y', 'z', 'w'"),
        ({}, ("x", "y", ["x"]), "Variable 'x' is in both x and z"),
        ({}, ([], "y"), "x and y must each name at least one variable"),
        ({"metric": "hgb"}, None, "The 'metric' parameter of ConditionalIndependence"),
        ({"early_stop": 0}, None, "The 'early_stop' parameter of ConditionalIndependence"),
        ({"screen_rows": 2}, None, "The 'screen_rows' parameter of ConditionalIndependence"),
        ({"asymptotic_rows": 500}, None, "The 'asymptotic_rows' parameter of Conditional"),
        ({"missing": "ignore"}, None, "The 'missing' parameter of ConditionalIndependence"),
    ],
)
def test_bad_input_is_refused_in_scikit_learns_words(params, call, message):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(chain(50, np.random.default_rng(0)), columns=["x", "y", "z", "w"])
    with pytest.raises(ValueError, match=message):
        ConditionalIndependence(frame, **params).test(*call)


def test_a_table_of_one_variable_or_of_dates_is_refused():
    pd = pytest.importorskip("pandas")
    with pytest.raises(ValueError, match="at least 2 variables"):
        ConditionalIndependence(np.zeros((10, 1)))
    dates = pd.DataFrame({"t": pd.date_range("2020", periods=10), "x": np.arange(10.0)})
    with pytest.raises(TypeError, match="Variable 't' has dtype datetime64"):
        ConditionalIndependence(dates)


def nonlinear_chain_frame(n=1000, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=n)
    b = np.sin(2 * a) + 0.3 * rng.normal(size=n)
    c = b**2 + 0.3 * rng.normal(size=n)
    d = rng.normal(size=n)
    return np.c_[a, b, c, d]


def test_causal_learn_runs_pc_and_fci_on_the_registered_tests():
    pytest.importorskip("causallearn", reason="needs the causal-learn extra")
    from causallearn.search.ConstraintBased.FCI import fci
    from causallearn.search.ConstraintBased.PC import pc
    from causallearn.utils.cit import CIT

    from sklearn_adm.causal import CausalLearnTest

    data = nonlinear_chain_frame()
    graph = pc(data, 0.01, "adm_dcor", show_progress=False, n_permutations=100).G
    edges = {
        (edge.get_node1().get_name(), edge.get_node2().get_name())
        for edge in graph.get_graph_edges()
    }
    assert edges == {("X1", "X2"), ("X2", "X3")}  # fisherz misses the square (the doctest)
    pag, _ = fci(data, "adm_dcor", 0.01, show_progress=False, verbose=False)
    assert len(pag.get_graph_edges()) == 2
    test = CIT(data, "adm_dcor", n_permutations=100)
    assert isinstance(test, CausalLearnTest) and test.tests.n_permutations == 100
    p = test(0, 2, [1])
    assert p > 0.01 and test(2, 0, (1,)) == p and test.tests.n_tests_ == 1  # its cache


def test_causal_learns_learned_test_is_the_adm_metric():
    pytest.importorskip("causallearn", reason="needs the causal-learn extra")
    from causallearn.utils.cit import CIT

    test = CIT(nonlinear_chain_frame(400), "adm_learned", critic_params={"max_iter": 100})
    assert test.tests.metric == "adm"
    assert test(0, 1) < 0.05


def test_pgmpy_finds_the_skeleton_through_both_of_its_interfaces():
    pytest.importorskip("pgmpy", reason="needs the pgmpy extra")
    pd = pytest.importorskip("pandas")
    from pgmpy.causal_discovery import PC

    from sklearn_adm.causal import PgmpyTest

    frame = pd.DataFrame(nonlinear_chain_frame(), columns=list("abcd"))
    search = PC(ci_test=PgmpyTest(frame), variant="stable", show_progress=False).fit(frame)
    assert {tuple(sorted(edge)) for edge in search.skeleton_.edges()} == {("a", "b"), ("b", "c")}
    test = PgmpyTest()  # the older interface passes the data at each call
    statistic, p_value = test("a", "c", ["b"], data=frame, boolean=False)
    assert p_value > 0.01 and test.p_value_ == p_value and test.effect_size_ == statistic
    assert test("a", "c", [], data=frame, significance_level=0.01) is False
    with pytest.raises(ValueError, match="needs the data it tests"):
        PgmpyTest()("a", "b")


def test_tigramite_pcmci_finds_a_lagged_square():
    pytest.importorskip("tigramite", reason="needs the tigramite extra")
    from tigramite.data_processing import DataFrame
    from tigramite.pcmci import PCMCI

    from sklearn_adm.causal import TigramiteTest

    rng = np.random.default_rng(1)
    data = rng.normal(size=(500, 3))
    for t in range(1, 500):  # x(t-1) -> y(t) through a square, which partial correlation misses
        data[t, 1] += 0.8 * data[t - 1, 0] ** 2
    test = TigramiteTest(n_permutations=100)
    results = PCMCI(DataFrame(data), cond_ind_test=test, verbosity=0).run_pcmci(
        tau_max=1, pc_alpha=0.01
    )
    links = {(i, j) for i, j in zip(*np.nonzero(results["p_matrix"][:, :, 1] < 0.01), strict=True)}
    assert (0, 1) in links and (2, 1) not in links
    with pytest.raises(ValueError, match="finds its own p-value"):
        TigramiteTest(significance="shuffle_test")
