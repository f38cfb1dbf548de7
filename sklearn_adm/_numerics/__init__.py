"""Numerical kernels on tensors: batched linear solves, elementwise functions, orthonormal
frames and their rotations, entropy by m-spacings, score matching. Imports only
:mod:`sklearn_adm._runtime`."""
