"""The package's layout: imports run one way, from the estimators down to the runtime."""

import ast
from pathlib import Path

import pytest

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
    "causal": 5,
    "_cli": 6,
    "__main__": 7,
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


def test_the_tests_mirror_the_parts():
    """A part's tests are in the folder of its name; those of several parts at the top."""
    folders = {path.name for path in Path(__file__).parent.iterdir() if path.is_dir()}
    assert folders - {"__pycache__"} <= set(LAYERS)
    for folder in folders - {"__pycache__"}:
        assert (Path(__file__).parent / folder / "__init__.py").is_file()


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


def _imported_modules(path):
    """The modules of the package that the module at ``path`` imports, at any depth (an
    imported name that is a module counts as that module)."""
    found = set()
    for target, names in _imports(path):
        for module in [target] if target is not None else []:
            submodules = [f"{module}.{name}" if module else name for name in names]
            found.update(sub for sub in submodules if _exists(sub))
            if module and not any(_exists(sub) for sub in submodules):
                found.add(module)
        if target is None:
            package = _module_name(path).rpartition(".")[0]
            found.update(
                f"{package}.{name}" if package else name
                for name in names
                if _exists(f"{package}.{name}" if package else name)
            )
    return found


def test_no_module_imports_itself_through_others():
    """No circle of imports, lazy ones included, between the modules of one part: each
    part reads from its leaves up."""
    graph = {_module_name(path): _imported_modules(path) for path in _modules()}
    graph = {module: {m for m in imports if m in graph} for module, imports in graph.items()}
    done, on_path = set(), []

    def visit(module):
        if module in on_path:
            circle = on_path[on_path.index(module) :] + [module]
            pytest.fail("import circle: " + " -> ".join(circle))
        if module in done:
            return
        on_path.append(module)
        for imported in sorted(graph[module]):
            if _part(imported) == _part(module):
                visit(imported)
        on_path.pop()
        done.add(module)

    for module in sorted(graph):
        visit(module)
