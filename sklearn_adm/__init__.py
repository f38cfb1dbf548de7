"""sklearn-adm: Adversarial Dependence Minimization for scikit-learn."""

from ._critic import ADMCritic
from ._pica import PICA

__all__ = ["ADMCritic", "PICA"]
__version__ = "0.1.0"
