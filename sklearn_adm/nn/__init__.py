"""The torch side of ADM: :class:`~sklearn_adm.ADMCritic` (the probes and dependency
predictors), its training step written out by hand, the optimizers, its training and
calibration, and :class:`~sklearn_adm.ADMRegularizer` for a user's own training loop.

Imports :mod:`sklearn_adm._numerics`, :mod:`sklearn_adm._data` and
:mod:`sklearn_adm._runtime`, never the game or the estimators."""
