"""sklearn-adm: Adversarial Dependence Minimization for scikit-learn."""

from ._critic import ADMCritic
from ._nonlinear import NonlinearPICA
from ._pica import PICA
from ._scorer import DependenceScorer

__all__ = ["ADMCritic", "DependenceScorer", "NonlinearPICA", "PICA"]
__version__ = "0.1.0"
