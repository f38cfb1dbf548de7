"""ICA as a drop-in for FastICA: our own equivalents of scikit-learn's FastICA test cases
(``sklearn/decomposition/tests/test_fastica.py``), run against :class:`sklearn_adm.ICA`."""

import warnings

import numpy as np
import pytest
from scipy import stats
from sklearn.decomposition import PCA, FastICA
from sklearn.exceptions import ConvergenceWarning

from sklearn_adm import ICA
from tests._helpers import amari_error

pytestmark = pytest.mark.numerics


def _standardised(x):
    return (x - x.mean(axis=0)) / x.std(axis=0)


def _square_and_cauchy(seed, noise=0.0):
    """scikit-learn's simple case: a square wave and a Cauchy source, 1,000 rows, mixed by a
    rotation-reflection of angle 0.6."""
    n = 1000
    square = (2 * np.sin(np.linspace(0, 100, n)) > 0) - 1.0
    cauchy = stats.t.rvs(1, size=n, random_state=seed)
    sources = _standardised(np.c_[square, cauchy])
    phi = 0.6
    mixing = np.array([[np.cos(phi), np.sin(phi)], [np.sin(phi), -np.cos(phi)]])
    X = sources @ mixing.T + noise * np.random.default_rng(seed).normal(size=(n, 2))
    return _standardised(X), sources


def _sine_and_steps(seed, noise=0.0):
    """scikit-learn's non-square case: two sources seen through six random mixtures."""
    t = np.linspace(0, 100, 1000)
    sources = _standardised(np.c_[np.sin(t), np.ceil(np.sin(np.pi * t))])
    rng = np.random.RandomState(seed)
    X = sources @ rng.randn(6, 2).T
    return _standardised(X + noise * rng.randn(*X.shape)), sources


def _recovery(estimated, sources):
    """For each source, the largest absolute correlation with an estimated component."""
    k = sources.shape[1]
    return np.abs(np.corrcoef(sources.T, estimated.T)[:k, k:]).max(axis=1)


def g_cube(x):
    return x**3, (3 * x**2).mean(axis=-1)


@pytest.mark.parametrize("algorithm", ["parallel", "deflation"])
@pytest.mark.parametrize("fun", ["logcosh", "exp", "cube", g_cube])
def test_simple_case_every_contrast_and_scheme(algorithm, fun):
    X, sources = _square_and_cauchy(42)
    ica = ICA(fun=fun, algorithm=algorithm, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ConvergenceWarning: the start is independent
        estimated = ica.fit_transform(X)
    assert (_recovery(estimated, sources) > 0.999).all()
    np.testing.assert_allclose(estimated, ica.transform(X), atol=1e-10)
    assert ica.components_.shape == ica.mixing_.shape == (2, 2)


def test_simple_case_is_fast_and_as_accurate_as_fastica():
    """The held-out critic finds nothing to remove in the start: no game (``n_iter_ == 0``),
    and the start's error stays within FastICA's."""
    X, sources = _square_and_cauchy(42)
    ica = ICA(random_state=0).fit(X)
    fastica = FastICA(random_state=0).fit(X)
    assert ica.n_iter_ == 0 and ica.history_[0]["independent"]
    mixing = np.linalg.lstsq(sources, X, rcond=None)[0].T
    assert amari_error(ica.components_, mixing) <= amari_error(fastica.components_, mixing) + 0.5


@pytest.mark.parametrize("whiten", ["unit-variance", "arbitrary-variance"])
def test_simple_case_with_noise(whiten):
    X, sources = _square_and_cauchy(0, noise=0.1)
    estimated = ICA(whiten=whiten, random_state=0).fit_transform(X)
    assert (_recovery(estimated, sources) > 0.9).all()


def test_already_white_data():
    """``whiten=False``: the input is taken as white, not centred, and ``components_`` is the
    rotation itself; ``n_components`` is ignored with FastICA's warning."""
    X, sources = _square_and_cauchy(1)
    white = PCA(whiten=True).fit_transform(X)
    with pytest.warns(UserWarning, match="Ignoring n_components with whiten=False."):
        ica = ICA(n_components=1, whiten=False, random_state=0).fit(white)
    rotation = ica.components_
    np.testing.assert_allclose(rotation @ rotation.T, np.eye(2), atol=1e-8)
    assert not hasattr(ica, "mean_") and not hasattr(ica, "whitening_")
    np.testing.assert_allclose(ica.transform(white + 1.0), (white + 1.0) @ rotation.T)
    np.testing.assert_allclose(ica.inverse_transform(ica.transform(white)), white, atol=1e-10)
    assert (_recovery(ica.transform(white), sources) > 0.999).all()


def test_two_rows_without_whitening():
    """scikit-learn's issue #697: two rows, whiten=False."""
    with pytest.warns(UserWarning, match="Ignoring n_components"):
        ica = ICA(n_components=1, whiten=False, random_state=0).fit([[0.0, 1.0], [1.0, 0.0]])
    assert ica.mixing_.shape == (2, 2)


@pytest.mark.parametrize("noise", [0.0, 0.1])
def test_fewer_sources_than_mixtures(noise):
    X, sources = _sine_and_steps(42, noise)
    ica = ICA(n_components=2, random_state=0)
    estimated = ica.fit_transform(X)
    np.testing.assert_allclose(estimated, (X - ica.mean_) @ ica.components_.T, atol=1e-10)
    assert (_recovery(estimated, sources) > (0.999 if noise == 0 else 0.99)).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_attributes_keep_the_input_dtype(dtype):
    X = np.random.RandomState(0).random_sample((100, 10)).astype(dtype)
    ica = ICA(n_components=5, max_iter=1000, random_state=0).fit(X)
    for name in ("components_", "mixing_", "mean_", "whitening_"):
        assert getattr(ica, name).dtype == dtype, name
    assert ica.transform(X).dtype == dtype


@pytest.mark.parametrize(
    "whiten, n_components, mixing_shape",
    [
        ("arbitrary-variance", 5, (10, 5)),
        ("arbitrary-variance", 10, (10, 10)),
        ("unit-variance", 5, (10, 5)),
        ("unit-variance", 10, (10, 10)),
        (False, None, (10, 10)),
    ],
)
def test_inverse_transform(whiten, n_components, mixing_shape):
    X = np.random.RandomState(0).random_sample((100, 10))
    ica = ICA(n_components=n_components, whiten=whiten, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # uniform noise: no sources
        Xt = ica.fit_transform(X)
    assert ica.mixing_.shape == mixing_shape
    X_back = ica.inverse_transform(Xt)
    assert X_back.shape == X.shape
    if mixing_shape[1] == X.shape[1]:
        np.testing.assert_allclose(X_back, X, atol=1e-10)


def test_fit_transform_equals_fit_then_transform():
    X = np.random.RandomState(0).random_sample((100, 10))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        Xt = ICA(n_components=5, random_state=0).fit_transform(X)
        Xt2 = ICA(n_components=5, random_state=0).fit(X).transform(X)
    np.testing.assert_allclose(Xt, Xt2)


def test_unit_variance_and_arbitrary_variance_as_fastica_scales_them():
    X = np.random.RandomState(0).random_sample((100, 10))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        unit = ICA(random_state=0).fit_transform(X)
        arbitrary = ICA(whiten="arbitrary-variance", random_state=0).fit_transform(X)
    np.testing.assert_allclose(unit.var(axis=0), 1.0)
    np.testing.assert_allclose(arbitrary.var(axis=0), 1 / len(X), rtol=1e-6)  # FastICA's


def test_whiten_solvers_agree():
    X, _ = _square_and_cauchy(3)
    outs = [ICA(whiten_solver=s, random_state=0).fit_transform(X) for s in ("svd", "eigh")]
    np.testing.assert_allclose(outs[0], outs[1], atol=1e-6)


def test_w_init_is_the_start():
    """From FastICA's own solution as ``w_init``, the fixed point stays there, and ICA's
    start is that solution."""
    X, sources = _square_and_cauchy(5)
    fastica = FastICA(random_state=0).fit(X)
    white = (X - fastica.mean_) @ fastica.whitening_.T * np.sqrt(len(X))
    rotation = np.linalg.lstsq(white, fastica.transform(X), rcond=None)[0].T
    ica = ICA(w_init=rotation, random_state=1).fit(X)
    assert (_recovery(ica.transform(X), sources) > 0.999).all()


def test_fastica_errors_reach_the_user():
    X = np.random.RandomState(0).random_sample((10, 3))
    with pytest.raises(ValueError, match=r"alpha must be in \[1,2\]"):
        ICA(fun_args={"alpha": 0}).fit(X)
    with pytest.raises(ValueError, match=r"w_init has invalid shape.+should be \(3, 3\)"):
        ICA(w_init=np.eye(4)).fit(X)
    with pytest.raises(ValueError):
        ICA(fun=np.tanh).fit(X)  # a contrast must return its derivative and the mean slope


def test_too_many_components_are_cut_with_fastica_warning():
    X = np.random.RandomState(0).random_sample((50, 3))
    with pytest.warns(UserWarning, match="n_components is too large: it will be set to 3"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            ica = ICA(n_components=5, random_state=0).fit(X)
    assert ica.components_.shape == (3, 3)


def test_convergence_failure_is_reported():
    X, _ = _sine_and_steps(0)
    with pytest.warns(ConvergenceWarning, match="FastICA did not converge"):
        ICA(n_components=2, max_iter=2, tol=0.0, random_state=0).fit(X)


def test_low_rank_data_with_eigh_warns_and_stays_finite():
    A = np.random.RandomState(0).randn(10, 2)
    with pytest.warns(UserWarning, match="There are some small singular values"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            ica = ICA(whiten_solver="eigh", random_state=0).fit(A @ A.T)
    assert np.isfinite(ica.components_).all()


def test_n_components_as_a_share_of_variance():
    X, sources = _sine_and_steps(42, noise=0.01)
    ica = ICA(n_components=0.99, random_state=0).fit(X)
    assert ica.n_components_ == 2  # two sources behind six mixtures
    assert (_recovery(ica.transform(X), sources) > 0.99).all()


def test_an_early_stop_is_said(capsys):
    X, _ = _square_and_cauchy(42)
    ICA(verbose=1, random_state=0).fit(X)
    assert "finds no dependence left" in capsys.readouterr().out


@pytest.mark.parametrize("solver", ["svd", "eigh"])
def test_the_whitening_is_fastica_s(solver):
    """ICA whitens as FastICA does (its solver, its scale and its signs), so that FastICA's
    ``w_init`` means the same start in both."""
    from sklearn_adm.decomposition._ica import fastica_whitener

    X, _ = _sine_and_steps(0, noise=0.01)
    fastica = FastICA(3, whiten_solver=solver, random_state=0).fit(X)
    np.testing.assert_allclose(
        fastica_whitener(X, 3, solver), fastica.whitening_.T * np.sqrt(len(X)), rtol=1e-10
    )


def test_a_constant_first_feature_loses_no_direction():
    """Every digit's corner pixel is 0, so is the first entry of every principal direction,
    and FastICA's whitening multiplies directions by ``sign(0) = 0``: its components leave
    PCA's subspace and explain less variance. ICA's whitening keeps every direction, so its
    components span PCA's subspace and reconstruct as much (before: the smallest cosine
    between the subspaces 0.10, the variance explained 0.85 of PCA's)."""
    from sklearn.datasets import load_digits
    from sklearn.decomposition import PCA

    X = load_digits().data[:600]
    ica = ICA(8, random_state=1).fit(X)
    pca = PCA(8).fit(X)
    basis = np.linalg.qr(ica.components_.T)[0]
    cosines = np.linalg.svd(pca.components_ @ basis, compute_uv=False)
    assert cosines.min() > 0.9999  # measured 0.999999 (the game trains in float32)

    def explained(model):
        residual = X - model.inverse_transform(model.transform(X))
        return 1 - residual.var(axis=0).sum() / X.var(axis=0).sum()

    assert explained(ica) == pytest.approx(explained(pca), rel=1e-5)


def test_rank_deficient_data_get_as_many_components_as_directions():
    """Three sources behind five mixtures: two directions of no variance. Whitened, their
    rounding would be scaled up to unit variance and the components built on it would be
    noise that ``mixing_`` cannot invert (before: 5 components, reconstruction errors of
    the data's size). ICA keeps the three directions of variance, and says so when more
    were asked for."""
    rng = np.random.default_rng(0)
    X = rng.laplace(size=(500, 3)) @ rng.normal(size=(3, 5))
    ica = ICA(random_state=0).fit(X)
    assert ica.n_components_ == 3 and ica.components_.shape == (3, 5)
    np.testing.assert_allclose(ica.inverse_transform(ica.transform(X)), X, atol=1e-6)
    with pytest.warns(UserWarning, match=r"n_components=4 is above the rank .+, 3: it will be set"):
        assert ICA(4, random_state=0).fit(X).n_components_ == 3


def test_fastica_s_warning_is_said_once():
    """Gaussian sources leave FastICA's fixed point unconverged; ICA's extra starts from
    random rotations (tried where a column looks Gaussian) do not repeat its warning."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3)) @ rng.normal(size=(3, 3))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ICA(random_state=0).fit(X)
    messages = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert len(messages) == 1 and messages[0].startswith("FastICA did not converge")
