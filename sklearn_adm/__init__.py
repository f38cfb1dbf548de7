"""sklearn-adm: Adversarial Dependence Minimization for scikit-learn."""

from ._critic import ADMCritic
from ._ica import ICA
from ._nonlinear import NonlinearPICA
from ._pica import PICA
from ._regularizer import ADMRegularizer
from ._scorer import DependenceScorer
from ._threads import training_threads

__all__ = [
    "ADMCritic",
    "ADMRegularizer",
    "DependenceScorer",
    "ICA",
    "NonlinearPICA",
    "PICA",
    "training_threads",
]
__version__ = "0.1.0"
