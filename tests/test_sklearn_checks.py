"""scikit-learn's own estimator checks, including those check_estimator does not run."""

import pytest
from sklearn.utils.estimator_checks import (
    check_global_output_transform_pandas,
    check_param_validation,
    check_set_output_transform,
    check_transformer_get_feature_names_out,
    parametrize_with_checks,
)

from sklearn_adm import ICA, PICA, NonlinearPICA
from tests._helpers import cut_warmup

# Few iterations: the checks test the API, not the quality of the fit.
ESTIMATORS = [
    PICA(max_iter=6),  # all components: no subspace to choose, the rotation solved once
    PICA(n_components=1, max_iter=6),  # the game
    # at least as many units as the checks' data have features (and so components)
    NonlinearPICA(max_iter=6, hidden_layer_sizes=(16,)),
    ICA(max_iter=6),
]


@pytest.fixture(autouse=True, scope="module")
def quick_fits():
    """The checks read what a fit returns, not how good it is: the critic's warm-up before
    the first update cut to a few steps; ICA's to half: a critic of a few steps sees no
    dependence, and ICA then rightly does not play, where check_transformer_n_iter asks for
    n_iter_ >= 1."""
    from sklearn_adm.decomposition import _ica

    with pytest.MonkeyPatch.context() as patch:
        cut_warmup(patch, 5)
        patch.setattr(_ica, "WARMUP_STEPS", 50)
        yield


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@parametrize_with_checks(ESTIMATORS)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
@pytest.mark.parametrize(
    "check",
    [
        check_param_validation,
        check_set_output_transform,
        check_global_output_transform_pandas,
        check_transformer_get_feature_names_out,
    ],
    ids=lambda c: c.__name__,
)
# check_global_output_transform_pandas fits on a DataFrame and transforms arrays, and the
# reverse, on purpose: scikit-learn's feature-name warnings are its expected output
@pytest.mark.filterwarnings("ignore:X (does not have valid|has) feature names:UserWarning")
def test_checks_not_run_by_check_estimator(estimator, check):
    check(type(estimator).__name__, estimator)
