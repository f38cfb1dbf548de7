"""Measuring and testing dependence: :class:`~sklearn_adm.DependenceScorer`, its conditional
test, the distance-correlation kernels, neighbour predictions and the gradient-boosting judge
(public in :mod:`sklearn_adm.metrics`).

Imports :mod:`sklearn_adm.nn` and the layers below it, never the game or the estimators."""
