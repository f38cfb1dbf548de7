"""The estimators: :class:`~sklearn_adm.PICA`, :class:`~sklearn_adm.ICA` and
:class:`~sklearn_adm.NonlinearPICA`, their shared base, and the autoencoders each plays the
game with.

Imports :mod:`sklearn_adm.game` and the layers below it. Torch and the game are imported
where a fit runs: a fitted PICA or ICA transforms without them."""
