"""sklearn-adm: Adversarial Dependence Minimization for scikit-learn."""

from ._critic import ADMCritic
from ._pica import PICA
from ._scorer import DependenceScorer

__all__ = ["ADMCritic", "DependenceScorer", "PICA"]
__version__ = "0.1.0"
