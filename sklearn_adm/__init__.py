"""sklearn-adm: Adversarial Dependence Minimization for scikit-learn.

The public names are imported when first used (PEP 562): ``import sklearn_adm`` and the
``transform`` of a fitted PICA or ICA need neither torch nor the training game, which a fit
imports.
"""

import importlib

#: each public name and the module that defines it
_MODULES = {
    "ADMCritic": ".nn._critic",
    "ADMRegularizer": ".nn._regularizer",
    "DependenceScorer": ".independence._scorer",
    "ICA": ".decomposition._ica",
    "NonlinearPICA": ".decomposition._nonlinear",
    "PICA": ".decomposition._pica",
    "training_threads": "._runtime.threads",
}

__all__ = sorted(_MODULES)
__version__ = "0.1.0"


def __getattr__(name):
    if name not in _MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_MODULES[name], __name__), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__():
    return sorted([*globals(), *_MODULES])
