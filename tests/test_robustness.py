"""Awkward but valid input gives finite output; property-based checks over shapes and scales."""

import functools
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_adm import ICA, PICA, DependenceScorer, NonlinearPICA
from sklearn_adm.decomposition._base import distinct_records

pytestmark = pytest.mark.numerics

QUICK = [
    PICA(n_components=2, max_iter=8, random_state=0),
    NonlinearPICA(n_components=2, max_iter=8, hidden_layer_sizes=(8,), random_state=0),
]
IDS = ["PICA", "NonlinearPICA"]


def awkward_inputs():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    yield "constant column", np.c_[X[:, :2], np.full(60, 4.0)]
    yield "duplicated column", np.c_[X[:, :2], X[:, 0]]
    yield "all constant", np.ones((60, 3))
    yield "scaled by 1e9", 1e9 * X
    yield "scaled by 1e-9", 1e-9 * X
    yield "two samples", X[:2]
    yield "integers", rng.integers(0, 10, size=(60, 3))
    yield "list", X.tolist()
    yield "Fortran order", np.asfortranarray(X)
    yield "DataFrame", pd.DataFrame(X, columns=["a", "b", "c"])


INPUTS = list(awkward_inputs())


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("estimator", QUICK, ids=IDS)
@pytest.mark.parametrize(("name", "X"), INPUTS, ids=[name for name, _ in INPUTS])
def test_awkward_input_gives_finite_output(estimator, name, X):
    Z = estimator.fit_transform(X)
    assert Z.shape == (len(X), 2)
    assert np.all(np.isfinite(Z))
    assert np.all(np.isfinite(estimator.inverse_transform(Z)))


@pytest.mark.parametrize("metric", ["dcor", "dcor_sq", "pearson"])
@pytest.mark.parametrize(("name", "X"), INPUTS, ids=[name for name, _ in INPUTS])
def test_scorer_on_awkward_input(metric, name, X):
    values = DependenceScorer(metric).per_feature(X)
    assert np.all(np.isfinite(values)) and np.all((values >= 0) & (values <= 1 + 1e-12))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n_samples=st.integers(2, 40),
    n_features=st.integers(1, 4),
    log_scale=st.integers(-8, 8),
    dtype=st.sampled_from([np.float32, np.float64]),
    seed=st.integers(0, 1000),
)
def test_fit_transform_never_returns_nan(n_samples, n_features, log_scale, dtype, seed):
    X = (np.random.default_rng(seed).normal(size=(n_samples, n_features)) * 10.0**log_scale).astype(
        dtype
    )
    for estimator in (
        PICA(max_iter=3, random_state=0),
        NonlinearPICA(max_iter=3, hidden_layer_sizes=(4,), random_state=0),
    ):
        Z = estimator.fit_transform(X)
        assert Z.dtype == dtype
        assert np.all(np.isfinite(Z))


def _unit_columns(Z):
    Z = Z / np.abs(Z).max()  # the squares of 1e-200 underflow
    return (Z - Z.mean(axis=0)) / Z.std(axis=0)


def _laplace_mixture():
    rng = np.random.default_rng(0)
    return rng.laplace(size=(300, 4)) @ rng.normal(size=(4, 4))


@functools.cache
def _fitted_on_laplace_mixture(estimator):
    """The reference fit of each estimator, shared by both scales."""
    return clone(estimator).fit(_laplace_mixture())


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.filterwarnings("ignore:overflow encountered in multiply:RuntimeWarning")
@pytest.mark.parametrize("factor", [1e-200, 1e200])
@pytest.mark.parametrize(
    "estimator",
    [
        PICA(n_components=2, max_iter=20, random_state=0),
        ICA(n_components=2, max_iter=20, random_state=0),
        NonlinearPICA(n_components=2, max_iter=20, hidden_layer_sizes=(8,), random_state=0),
    ],
    ids=["PICA", "ICA", "NonlinearPICA"],
)
def test_any_finite_scale_gives_the_same_components(estimator, factor):
    """The variances of entries of 1e200 overflow and those of 1e-200 underflow; such data
    used to give all-zero or constant components (PICA with a false 'diverged' warning)."""
    X = _laplace_mixture()
    reference = _fitted_on_laplace_mixture(estimator)
    scaled = clone(estimator).fit(factor * X)
    Z, Z_scaled = reference.transform(X), scaled.transform(factor * X)
    np.testing.assert_allclose(_unit_columns(Z_scaled), _unit_columns(Z), atol=1e-6)
    np.testing.assert_allclose(
        scaled.inverse_transform(Z_scaled) / factor, reference.inverse_transform(Z), atol=1e-6
    )


def test_pica_on_constant_data_converges_to_zero_components_without_warnings():
    """Every direction has zero variance: there is nothing to fit and nothing diverges (the
    variance shares used to be 0 / 0 and the game reported a divergence)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pica = PICA(n_components=2, random_state=0).fit(np.full((60, 3), 4.0))
    np.testing.assert_array_equal(pica.transform(np.full((5, 3), 4.0)), 0.0)
    np.testing.assert_array_equal(pica.explained_variance_, 0.0)
    assert pica.n_iter_ < pica.max_iter


def test_duplicated_records_of_continuous_data_count_once():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 4))
    np.testing.assert_array_equal(distinct_records(X), np.arange(100))
    # the same record twice more, and another once more: the first occurrences remain
    np.testing.assert_array_equal(
        distinct_records(np.r_[X[:50], X[[3, 3]], X[50:], X[[7]]]),
        np.r_[np.arange(50), np.arange(52, 102)],
    )


@pytest.mark.parametrize(
    ("name", "X"),
    [
        ("counts", np.random.default_rng(0).poisson(2.0, size=(100, 4)).astype(float)),
        (
            "a categorical column",
            np.r_[
                np.c_[np.random.default_rng(0).normal(size=(90, 2)), np.arange(90) % 2],
                np.zeros((10, 3)),
            ],
        ),
        (
            "copies outnumber the records",
            np.repeat(np.random.default_rng(0).normal(size=(40, 3)), 3, axis=0),
        ),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_rows_that_repeat_as_the_distribution_all_count(name, X):
    assert len(np.unique(X, axis=0)) < len(X)
    np.testing.assert_array_equal(distinct_records(X), np.arange(len(X)))


def _row_space(components):
    basis = np.linalg.qr(components.T)[0]
    return basis @ basis.T


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_pica_learns_the_same_subspace_with_duplicated_records():
    """An atom of many copies used to pull the principal directions, and the game, towards
    itself; the copies of a record now count once."""
    rng = np.random.default_rng(0)
    X = rng.laplace(size=(300, 4)) @ rng.normal(size=(4, 4))
    with_copies = np.r_[X, np.repeat(X[:5], 20, axis=0)]
    pica = PICA(n_components=2, max_iter=30, random_state=0)
    reference, copied = clone(pica).fit(X), clone(pica).fit(with_copies)
    np.testing.assert_allclose(
        _row_space(copied.components_), _row_space(reference.components_), atol=1e-6
    )
    # the fitted state still describes all the rows: PCA's mean, uncorrelated components
    np.testing.assert_allclose(copied.mean_, with_copies.mean(axis=0))
    Z = copied.transform(with_copies)
    np.testing.assert_allclose(np.corrcoef(Z.T)[0, 1], 0.0, atol=1e-9)


def test_warnings_name_the_line_that_called_the_package():
    """A ConvergenceWarning points at the user's ``fit`` (directly, through a pipeline, and
    FastICA's own from ICA's start), not at the package's internals."""
    X = np.random.default_rng(0).laplace(size=(300, 4))
    calls = [
        lambda: PICA(2, max_iter=3, random_state=0).fit(X),
        lambda: make_pipeline(StandardScaler(), PICA(2, max_iter=3, random_state=0)).fit(X),
        lambda: ICA(2, max_iter=2, tol=0.0, random_state=0).fit(X),
    ]
    for call in calls:
        with pytest.warns(ConvergenceWarning) as records:
            call()
        assert {record.filename for record in records} == {__file__}
