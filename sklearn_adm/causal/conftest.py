"""pytest: the doctests of an adapter run only where its library (its extra) is installed."""

import importlib.util

#: each adapter module and the library it imports
_ADAPTERS = {"_causallearn.py": "causallearn", "_pgmpy.py": "pgmpy", "_tigramite.py": "tigramite"}

collect_ignore = [
    path for path, module in _ADAPTERS.items() if importlib.util.find_spec(module) is None
]
