"""What the hand-written runtime machinery buys against the plain library, in one run.

Usage: python benchmarks/bench_runtime.py [--repeats 3]

Each row times the package's way and the plain library's on the same work, alternating
fresh processes (the first of each pair changes turn), and prints the medians and their
ratio:

- ``nn/_optim.py`` against ``torch.optim.Adam``: a fresh process's first fit (PICA(2) on the
  paper's example), where torch's optimizers import ``torch._dynamo`` at their first call;
  and the steady step of each on a critic-sized layer (the same fused kernel).
- ``_runtime/allocator.py`` against leaving glibc alone: PICA(32) on 3,000 x 384
  embedding-like rows under ``MALLOC_TRIM_THRESHOLD_=65536`` (Dask's workers' setting).
- the load following of ``_runtime/threads.py`` against threads chosen once at the start
  (threadpoolctl's ``threadpool_limits`` as a fit begins): PICA(32) as above, a busy process
  started 0.3 s into the fit (the fit's start reads an idle machine).
"""

import argparse
import os
import statistics
import subprocess
import sys
import textwrap

FIRST_FIT = """
import time
start = time.perf_counter()
from sklearn_adm import PICA
from sklearn_adm.datasets import make_pca_vs_pica
X, _ = make_pca_vs_pica(2000, random_state=0)
{patch}
PICA(2, random_state=0).fit(X)
print(time.perf_counter() - start)
"""

PLAIN_ADAM = """
import torch
from sklearn_adm.game import _loop
from sklearn_adm.nn import _training
from sklearn_adm.nn._optim import adam_kernel
class PlainCriticAdam(torch.optim.Adam):  # the critic's optimizer as torch.optim.Adam
    updates_input_layer = False
    def __init__(self, critic, learning_rate, device):
        super().__init__(critic.parameters(), learning_rate, **adam_kernel(device))
_loop.CriticAdam = _training.CriticAdam = PlainCriticAdam
"""

STEADY_STEP = """
import time, torch
from sklearn_adm.nn._optim import make_adam
torch.manual_seed(0)
weight = torch.nn.Parameter(torch.randn(256, 256 * 32))
optimizer = {make}
for k in range(60):
    if k == 10:
        start = time.perf_counter()
    weight.grad = torch.randn_like(weight)
    optimizer.step()
print((time.perf_counter() - start) / 50 * 1e3)
"""

EMBEDDING_FIT = """
import time
from sklearn_adm import PICA
from sklearn_adm.datasets import make_embedding_like
X = make_embedding_like(3000, 384, random_state=0)[0]
PICA(4, max_iter=5, random_state=0).fit(X[:500])  # imports and compiles, untimed
{patch}
{busy}
start = time.perf_counter()
PICA(32, random_state=0).fit(X)
print(time.perf_counter() - start)
"""

NO_ALLOCATOR = """
import contextlib
from sklearn_adm._runtime import allocator
from sklearn_adm.nn import _training
allocator.training_allocations = _training.training_allocations = contextlib.nullcontext
"""

NO_FOLLOWING = """
from sklearn_adm._runtime import threads
def follow_load():
    pass
threads.follow_load = follow_load
import sklearn_adm.game._loop, sklearn_adm.nn._training, sklearn_adm._numerics.spacings
for module in (sklearn_adm.game._loop, sklearn_adm.nn._training, sklearn_adm._numerics.spacings):
    module.follow_load = follow_load
"""

BUSY_LATER = """
import subprocess, sys, threading, atexit
busy = []
def start_busy():
    busy.append(subprocess.Popen([sys.executable, "-c", "while True: pass"]))
threading.Timer(0.3, start_busy).start()
atexit.register(lambda: [process.kill() for process in busy])
"""


def run(code, env=None):
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        check=True,
    )
    return float(result.stdout.strip().splitlines()[-1])


def compare(name, ours, plain, repeats, env=None):
    times = {"ours": [], "plain": []}
    for k in range(repeats):
        order = [("ours", ours), ("plain", plain)]
        for label, code in order if k % 2 == 0 else order[::-1]:
            times[label].append(run(code, env))
    a, b = statistics.median(times["ours"]), statistics.median(times["plain"])
    spread = {key: f"{min(v):.3g}-{max(v):.3g}" for key, v in times.items()}
    print(
        f"| {name} | {a:.3g} ({spread['ours']}) | {b:.3g} ({spread['plain']}) | {b / a:.2f} |",
        flush=True,
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    repeats = parser.parse_args().repeats
    print("| work | ours: median (range) | plain library | plain / ours |")
    print("| --- | --- | --- | --- |")
    compare(
        "first fit in a fresh process, s (our Adam / torch.optim.Adam)",
        FIRST_FIT.format(patch=""),
        FIRST_FIT.format(patch=PLAIN_ADAM),
        repeats,
    )
    compare(
        "steady Adam step, 256 x 8,192 weights, ms",
        STEADY_STEP.format(make='make_adam([weight], 1e-3, torch.device("cpu"))'),
        STEADY_STEP.format(make="torch.optim.Adam([weight], 1e-3, fused=True)"),
        repeats,
    )
    compare(
        "PICA(32) under MALLOC_TRIM_THRESHOLD_=65536, s (thresholds raised / left)",
        EMBEDDING_FIT.format(patch="", busy=""),
        EMBEDDING_FIT.format(patch=NO_ALLOCATOR, busy=""),
        repeats,
        env={"MALLOC_TRIM_THRESHOLD_": "65536"},
    )
    compare(
        "PICA(32), a busy process from 0.3 s, s (following / chosen at the start)",
        EMBEDDING_FIT.format(patch="", busy=BUSY_LATER),
        EMBEDDING_FIT.format(patch=NO_FOLLOWING, busy=BUSY_LATER),
        repeats,
    )


if __name__ == "__main__":
    main()
