"""Warnings raised at the line of the user's code that called the package."""

import contextlib
import importlib.util
import os
import sys
import warnings

#: frames in these files are the machinery between the user's call and the warning:
#: this package, scikit-learn's wrappers (``_fit_context``, pipelines, searches) and
#: joblib's, torch's decorators and ``contextlib`` (found without importing them)
_PACKAGES = (__package__.partition(".")[0], "sklearn", "joblib", "torch")
_MACHINERY = (
    *(
        os.path.dirname(importlib.util.find_spec(name).origin) + os.sep
        for name in _PACKAGES
        if importlib.util.find_spec(name) is not None
    ),
    contextlib.__file__,
)


def warn(message, category=UserWarning):
    """``warnings.warn`` with the stack level of the first frame outside the machinery, so
    that the warning names the user's line (a ``fit`` call, a pipeline's, a search's)."""
    frame, level = sys._getframe(1), 2
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_MACHINERY):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


@contextlib.contextmanager
def raised_at_caller():
    """Re-raise the warnings of the block (a peer library's, such as FastICA's) at the
    user's line, with the filters the user set."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for record in caught:
        warn(str(record.message), record.category)
