"""Causal discovery on sklearn-adm's conditional test.

:class:`ConditionalIndependence` runs the tests that PC, FCI and PCMCI ask of one data table,
sharing the work on each conditioning set. The adapters put it inside the libraries that run
those searches, each imported when its name is first used (PEP 562), so that none of those
libraries is needed for the rest:

- :class:`CausalLearnTest`: causal-learn's ``CIT_Base``, registered as ``"adm_dcor"`` and
  ``"adm_learned"`` for ``pc(data, alpha, "adm_dcor")`` and ``fci``;
- :class:`PgmpyTest`: a test for pgmpy's ``PC(data).estimate(ci_test=PgmpyTest())``;
- :class:`TigramiteTest`: tigramite's ``CondIndTest``, for ``PCMCI``.
"""

import importlib

#: each public name, the module that defines it, and the extra that installs its library
_MODULES = {
    "ConditionalIndependence": ("._engine", None),
    "CausalLearnTest": ("._causallearn", "causal-learn"),
    "PgmpyTest": ("._pgmpy", "pgmpy"),
    "TigramiteTest": ("._tigramite", "tigramite"),
}

__all__ = sorted(_MODULES)


def __getattr__(name):
    if name not in _MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, extra = _MODULES[name]
    try:
        value = getattr(importlib.import_module(module, __name__), name)
    except ModuleNotFoundError as error:
        if extra is None or error.name is None or error.name.startswith("sklearn_adm"):
            raise
        raise ImportError(
            f"{name} needs {extra}, which is not installed: pip install 'sklearn-adm[{extra}]'"
        ) from error
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__():
    return sorted([*globals(), *_MODULES])
