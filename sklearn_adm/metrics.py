"""Dependence metrics on plain arrays: distance correlation, exact and fast, and a judge of
another model family (gradient-boosted trees).

The functions live in :mod:`sklearn_adm.independence`; this module is their public address.
"""

from .independence._distance import (
    distance_correlation_one_vs_rest,
    permuted_distance_correlation,
)
from .independence._sorting import distance_correlation_pairwise
from .independence._trees import gradient_boosting_dependence

__all__ = [
    "distance_correlation_one_vs_rest",
    "distance_correlation_pairwise",
    "gradient_boosting_dependence",
    "permuted_distance_correlation",
]
