"""The package's layout: imports run one way, from the estimators down to the runtime, and
pickles written by 0.1.0 (a flat layout) still load."""

import ast
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch

import sklearn_adm

PACKAGE = Path(sklearn_adm.__file__).parent
#: each part of the package and its layer: a module imports only from lower layers and from
#: its own part (parts of one layer do not import each other)
LAYERS = {
    "_runtime": 0,
    "datasets": 0,
    "_numerics": 1,
    "_data": 1,
    "nn": 2,
    "game": 3,
    "independence": 4,
    "decomposition": 4,
    "metrics": 5,
    "_cli": 6,
    "__main__": 7,
    "_legacy": 8,
    "__init__": 9,
}


def _module_name(path):
    """The dotted name of the module at ``path``, below ``sklearn_adm``."""
    return ".".join(path.relative_to(PACKAGE).with_suffix("").parts)


def _part(module):
    """The part of the package that the dotted ``module`` (below ``sklearn_adm``) is in."""
    return module.split(".")[0] if module else "__init__"


def _imports(path):
    """The parts of the package that the module at ``path`` imports, at any depth."""
    module = _module_name(path)
    package = module.rpartition(".")[0] if path.name != "__init__.py" else module
    package = package.removesuffix("__init__").rstrip(".")
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package.split(".") if package else []
            base = base[: len(base) - (node.level - 1)]
            target = ".".join([*base, *(node.module.split(".") if node.module else [])])
            yield target if node.module else None, [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom | ast.Import):
            for name in (
                [node.module]
                if isinstance(node, ast.ImportFrom)
                else [alias.name for alias in node.names]
            ):
                if name and name.split(".")[0] == "sklearn_adm":
                    yield name.removeprefix("sklearn_adm").lstrip("."), []


def _exists(module):
    """Whether the dotted ``module`` (below ``sklearn_adm``) is a module or package of it."""
    path = PACKAGE.joinpath(*module.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _modules():
    return sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", _modules(), ids=lambda path: str(path.relative_to(PACKAGE)))
def test_imports_run_down_the_layers(path):
    own = _part(_module_name(path))
    for target, names in _imports(path):
        modules = [target] if target is not None else names
        for module in modules:
            assert not module or _exists(module), f"{path.name} imports {module!r}: no such module"
        parts = [_part(module) for module in modules]
        for part in parts:
            assert part in LAYERS, f"{path.name} imports {part!r}, which has no layer"
            if part != own:
                assert LAYERS[part] < LAYERS[own], f"{own} imports {part}: an arrow up or across"


def test_every_part_of_the_package_has_a_layer():
    parts = {
        _part(".".join(path.relative_to(PACKAGE).with_suffix("").parts)) for path in _modules()
    }
    assert parts == set(LAYERS)


def test_the_public_names_live_in_their_parts():
    where = {name: getattr(sklearn_adm, name).__module__ for name in sklearn_adm.__all__}
    assert where == {
        "ADMCritic": "sklearn_adm.nn._critic",
        "ADMRegularizer": "sklearn_adm.nn._regularizer",
        "DependenceScorer": "sklearn_adm.independence._scorer",
        "ICA": "sklearn_adm.decomposition._ica",
        "NonlinearPICA": "sklearn_adm.decomposition._nonlinear",
        "PICA": "sklearn_adm.decomposition._pica",
        "training_threads": "sklearn_adm._runtime.threads",
    }


@pytest.fixture(scope="module")
def written_by_0_1_0():
    with open(Path(__file__).parent / "data" / "sklearn_adm-0.1.0.pkl", "rb") as file:
        return pickle.load(file)


@pytest.mark.parametrize("name", ["PICA", "ICA", "NonlinearPICA", "PICA_partial_fit"])
def test_models_pickled_by_0_1_0_transform_as_they_did(written_by_0_1_0, name):
    model, transformed = written_by_0_1_0[name]
    assert type(model).__module__.startswith("sklearn_adm.decomposition.")
    np.testing.assert_array_equal(model.transform(written_by_0_1_0["X"]), transformed)


def test_a_stream_pickled_by_0_1_0_goes_on(written_by_0_1_0):
    model, _ = written_by_0_1_0["PICA_partial_fit"]
    n_iter = model.n_iter_
    model.partial_fit(written_by_0_1_0["X"][200:])
    assert model.n_iter_ > n_iter


def test_scorer_and_regularizer_pickled_by_0_1_0_compute_as_they_did(written_by_0_1_0):
    X = written_by_0_1_0["X"]
    scorer, score = written_by_0_1_0["DependenceScorer"]
    # to rounding: the BLAS's eigensolver sums in another order on another CPU (1e-15 apart
    # between the Zen 4 CPU that wrote the file and a Xeon)
    assert scorer.score(X) == pytest.approx(score, rel=1e-12, abs=0)
    regularizer, loss = written_by_0_1_0["ADMRegularizer"]
    with torch.no_grad():
        assert float(regularizer.loss(torch.as_tensor(X, dtype=torch.float32))) == loss


def test_old_module_names_answer_only_for_0_1_0s_modules():
    from sklearn_adm import _legacy

    with pytest.raises(ModuleNotFoundError):
        __import__("sklearn_adm._no_such_module")
    old = __import__("sklearn_adm._game", fromlist=["AdversarialGame"])
    from sklearn_adm.game._loop import AdversarialGame

    assert old.AdversarialGame is AdversarialGame
    with pytest.raises(AttributeError, match="_game"):
        old.no_such_name  # noqa: B018
    assert set(_legacy.MOVED) >= {"_pica", "_game", "_base", "_stopping", "_critic", "_adam"}
