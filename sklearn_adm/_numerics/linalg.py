"""Linear solves of batches of matrices, safe on every number of CPU threads.

torch factors the matrices of a batch on several threads at once, each thread calling MKL's LU
(``getrf``), which is not safe to call so once ``torch.set_num_threads`` has allowed it threads of
its own: from about 150 x 150 up, a batch of two or more prints "Intel oneMKL ERROR: Parameter 6 was
incorrect on entry to SLASWP" and hangs or returns wrong numbers (pytorch/pytorch#141358 and
#142815; torch 2.5 to 2.13 at least). Every fit sets the threads
(:mod:`sklearn_adm._runtime.threads`), and ``PICA()`` on 384-dimensional embeddings (384 components)
hung there. On the CPU the matrices of a batch are therefore solved one at a time, each by the same
LAPACK call: the same numbers.
"""

import numpy as np
import torch

__all__ = ["solve_ex"]


def solve_ex(A, B):
    """``torch.linalg.solve_ex(A, B)``: ``(solution, info)`` for square ``A`` ``(..., n, n)``
    and ``B`` ``(..., n, k)`` whose leading axes broadcast, one matrix at a time on the
    CPU."""
    if A.device.type != "cpu" or (A.ndim == 2 and B.ndim == 2):
        return torch.linalg.solve_ex(A, B)
    # numpy's, not torch's: torch.broadcast_shapes imports sympy on its first call
    batch = np.broadcast_shapes(A.shape[:-2], B.shape[:-2])
    A = A.expand(*batch, *A.shape[-2:]).reshape(-1, *A.shape[-2:])
    B = B.expand(*batch, *B.shape[-2:]).reshape(-1, *B.shape[-2:])
    solved = [torch.linalg.solve_ex(a, b) for a, b in zip(A, B, strict=True)]
    solutions = torch.stack([solution for solution, _ in solved])
    infos = torch.stack([info for _, info in solved])
    return solutions.reshape(*batch, *B.shape[-2:]), infos.reshape(batch)
