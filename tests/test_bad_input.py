"""Bad input gets a clear scikit-learn error, never a torch traceback: the estimators and the
scorer, one battery. Parameter-specific errors are tested next to each class."""

import numpy as np
import pytest
import scipy.sparse
import torch
from sklearn.exceptions import NotFittedError

from sklearn_adm import ICA, PICA, DependenceScorer, NonlinearPICA

TARGETS = {
    "PICA": lambda **params: PICA(**{"max_iter": 2, **params}),
    "NonlinearPICA": lambda **params: NonlinearPICA(
        **{"max_iter": 2, "hidden_layer_sizes": (4,), **params}
    ),
    "ICA": lambda **params: ICA(**{"max_iter": 2, **params}),
    "DependenceScorer": lambda **params: DependenceScorer(**params),
}
ESTIMATORS = ["PICA", "NonlinearPICA", "ICA"]


def consume(target, X):
    """What each target does with data: estimators fit, the scorer scores."""
    return target.fit(X) if hasattr(target, "fit") else target.per_feature(X)


GOOD = np.random.default_rng(0).normal(size=(30, 3))
BAD_INPUT = {
    "NaN": (np.where(np.eye(30, 3) > 0, np.nan, GOOD), ValueError, "contains NaN"),
    "inf": (np.where(np.eye(30, 3) > 0, np.inf, GOOD), ValueError, "contains infinity"),
    "no rows": (np.empty((0, 3)), ValueError, "0 sample\\(s\\)"),
    "no columns": (np.empty((30, 0)), ValueError, "0 feature\\(s\\)"),
    "one sample": (GOOD[:1], ValueError, "minimum of 2 is required"),
    "1-D": (GOOD[:, 0], ValueError, "Expected a 2-dimensional container|Expected 2D array"),
    "3-D": (np.zeros((5, 3, 2)), ValueError, "Found array with dim 3"),
    "strings": (np.array([["a", "b"], ["c", "d"]]), ValueError, "could not convert"),
    "sparse": (scipy.sparse.random(30, 3, density=0.5, format="csr"), TypeError, "Sparse data"),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(("X", "error", "message"), BAD_INPUT.values(), ids=BAD_INPUT.keys())
def test_bad_data(target, X, error, message):
    with pytest.raises(error, match=message):
        consume(TARGETS[target](), X)


@pytest.mark.parametrize("target", TARGETS)
def test_unknown_device(target):
    with pytest.raises(ValueError, match="device must be 'auto', 'cpu', 'cuda', 'cuda:N' or"):
        consume(TARGETS[target](device="tpu"), GOOD)


@pytest.mark.skipif(torch.cuda.is_available(), reason="tests the absence of CUDA")
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("device", ["cuda", "cuda:1"])
def test_cuda_without_cuda(target, device):
    with pytest.raises(ValueError, match="CUDA is not available"):
        consume(TARGETS[target](device=device), GOOD)


@pytest.mark.parametrize("target", ESTIMATORS)
@pytest.mark.parametrize("params", [{"max_iter": 0}, {"learning_rate": -1.0}, {"n_init": 0}])
def test_out_of_range_parameters(target, params):
    name = next(iter(params))
    with pytest.raises(ValueError, match=f"The '{name}' parameter of {target} must be"):
        consume(TARGETS[target](**params), GOOD)


@pytest.mark.parametrize("target", [name for name in ESTIMATORS if name != "ICA"])
def test_n_components_above_n_features(target):
    """ICA cuts them with FastICA's warning instead (test_ica_fastica_suite.py)."""
    with pytest.raises(ValueError, match="n_components=4 must be between 1 and n_features=3"):
        consume(TARGETS[target](n_components=4), GOOD)


@pytest.mark.parametrize("target", ESTIMATORS)
@pytest.mark.parametrize("method", ["transform", "inverse_transform"])
def test_use_before_fit(target, method):
    with pytest.raises(NotFittedError, match=f"This {target} instance is not fitted yet"):
        getattr(TARGETS[target](), method)(GOOD)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("target", ESTIMATORS)
def test_wrong_width_at_transform_and_inverse_transform(target):
    model = TARGETS[target](n_components=2, random_state=0).fit(GOOD)
    with pytest.raises(ValueError, match=f"X has 2 features, but {target} is expecting 3"):
        model.transform(GOOD[:, :2])
    with pytest.raises(ValueError, match=f"X has 3 features, but {target} is expecting 2"):
        model.inverse_transform(GOOD)
    with pytest.raises(ValueError, match="contains NaN"):
        model.inverse_transform(np.full((4, 2), np.nan))
