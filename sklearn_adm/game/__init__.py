"""The ADM game (Algorithm 1 of the paper), written once for every estimator: the loop, the
interface an autoencoder implements for it, its settings, its stopping rules and history.

Imports :mod:`sklearn_adm.nn` and the layers below it, never the estimators."""
