"""Where the modules of sklearn-adm 0.1.0 went, so that its pickles still load.

0.1.0 kept every module at the top of the package (``sklearn_adm._pica``,
``sklearn_adm._game``, ...), and a pickle names each object's class by the module that defined
it. :func:`install` adds a finder that answers for those module names alone: importing one
gives a stand-in module that looks each name up in the modules it moved to, importing them
only then. No other import is touched.
"""

import importlib
import importlib.abc
import importlib.util
import sys
import types

#: each module of 0.1.0 and the modules its names live in now, searched in this order
MOVED = {
    "_adam": ("nn._optim",),
    "_allocator": ("_runtime.allocator",),
    "_base": ("decomposition._base", "_data.rows"),
    "_chunked": ("_data.chunked",),
    "_conditional": ("independence._conditional",),
    "_critic": ("nn._critic",),
    "_critic_step": ("nn._critic_step",),
    "_demo": ("_cli.demo",),
    "_device": ("_runtime.device",),
    "_functional": ("_numerics.functional",),
    "_game": ("game._loop", "game._autoencoders", "game._settings", "nn._training"),
    "_ica": ("decomposition._ica",),
    "_ica_start": ("decomposition._ica_start",),
    "_linalg": ("_numerics.linalg",),
    "_linear": ("decomposition._linear",),
    "_neighbours": ("independence._neighbours",),
    "_nonlinear": ("decomposition._nonlinear",),
    "_pica": ("decomposition._pica",),
    "_pica_encoders": ("decomposition._pica_encoders",),
    "_regularizer": ("nn._regularizer",),
    "_rotation": ("_numerics.rotation", "nn._optim"),
    "_scaling": ("_data.scaling",),
    "_score_matching": ("_numerics.score_matching",),
    "_scorer": ("independence._scorer",),
    "_spacings": ("_numerics.spacings",),
    "_stopping": ("game._stopping",),
    "_streaming": ("_data.streaming",),
    "_threads": ("_runtime.threads",),
    "_warnings": ("_runtime.warnings",),
}
_PACKAGE = __name__.rpartition(".")[0]


class _MovedModule(types.ModuleType):
    """A 0.1.0 module: each attribute is read from the first of its new modules that has it."""

    def __getattr__(self, name):
        for new in MOVED[self.__name__.rpartition(".")[2]]:
            module = importlib.import_module(f"{_PACKAGE}.{new}")
            if hasattr(module, name):
                return getattr(module, name)
        raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path, target=None):
        package, _, module = fullname.rpartition(".")
        if package != _PACKAGE or module not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        return _MovedModule(spec.name)

    def exec_module(self, module):
        """Nothing to run: the names are looked up when read."""


def install():
    """Answer for 0.1.0's module names (once per process)."""
    if not any(isinstance(finder, _Finder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
