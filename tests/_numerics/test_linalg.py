"""Batched solves that torch's batched LU on the CPU would hang on (pytorch#141358)."""

import subprocess
import sys
import textwrap

import torch

from sklearn_adm._numerics.linalg import solve_ex


def test_solve_ex_matches_torch_on_a_broadcast_batch():
    generator = torch.Generator().manual_seed(0)
    A = torch.randn(3, 1, 5, 5, generator=generator, dtype=torch.float64) + 5 * torch.eye(5)
    A[1, 0, :, 0] = 0.0  # singular: LAPACK's info names the zero pivot
    B = torch.randn(4, 5, 2, generator=generator, dtype=torch.float64)
    solution, info = solve_ex(A, B)
    expected = torch.linalg.solve_ex(A, B)[0]
    assert solution.shape == (3, 4, 5, 2) and info.shape == (3, 4)
    torch.testing.assert_close(solution[[0, 2]], expected[[0, 2]], rtol=0, atol=1e-12)
    assert (info[[0, 2]] == 0).all() and (info[1] > 0).all()


def test_large_batches_on_two_threads_are_solved():
    """torch's own batched solve of two 200 x 200 matrices after ``set_num_threads(2)``
    prints MKL's SLASWP error and hangs; in a subprocess, so that a hang fails the test."""
    script = textwrap.dedent(
        """
        import torch
        from sklearn_adm._numerics.rotation import _cayley
        torch.set_num_threads(2)
        A = torch.randn(2, 200, 200, generator=torch.Generator().manual_seed(0))
        A = (A - A.mT) / 40
        R = _cayley(A)
        error = (R.mT @ R - torch.eye(200)).abs().max().item()
        assert error < 1e-4, error
        print("solved")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "solved" and "MKL ERROR" not in done.stdout
