"""The critic's step time and peak memory next to d separately written MLPs, and the scorer's
and PICA's times: one table, CPU and CUDA side by side (``make bench``).

Usage: python benchmarks/bench_critic.py [--sizes 64 256 ...] [--devices cpu cuda]
                                         [--tasks dcor adm ...] [--output doc/bench_table.md]

Every measurement runs in a fresh process, so that its peak memory is its own: on the CPU the
process's peak resident memory (``ru_maxrss``, the Python interpreter and torch included), on
CUDA torch's peak allocated memory. A critic step is one update of the dependence branch as the
game runs it (:class:`sklearn_adm.game._loop.CriticUpdates`: on CUDA a replayed graph), on n = 256
rows of d standard normal features. The looped MLPs are the same critic written as a user
would without batching: d probes (1 -> 16 -> 1) and d predictors (d - 1 -> 32 -> 1) in
``nn.ModuleList``s, run one after the other, trained by the same fused Adam on the same loss.
The table gives the median of the timed steps after one warm-up step, and the ratio of the
looped step to the batched one.
"""

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
import warnings

import torch
from torch import nn

#: rows of a critic minibatch, as in the issue's and the paper's measurements
_ROWS = 256
#: seconds of timed steps aimed at per measurement (at least 2, at most 20 steps)
_BUDGET_S = 8.0
#: a device's columns in the table
_COLUMNS = ("time", "peak memory", "looped MLPs", "looped / batched")
#: the end-to-end rows: (name, label)
_TASKS = (
    ("dcor", 'DependenceScorer("dcor"), 5,000 x 64'),
    ("adm", 'DependenceScorer("adm"), 5,000 x 64'),
    ("adm-1024", 'DependenceScorer("adm"), predictor_rank=32, 5,000 x 1,024'),
    ("dcor-1024", 'DependenceScorer("dcor"), 5,000 x 1,024'),
    ("pica", "PICA, the paper's example, n = 10,000"),
    ("pica-1024", "PICA(32), 3,000 x 1,024"),
)


def _standardize(z):
    z = z - z.mean(dim=0)
    return z * torch.rsqrt(z.square().mean(dim=0) + 1e-5)


class LoopedCritic(nn.Module):
    """The ADM critic as d separately written probes and predictors."""

    def __init__(self, d):
        super().__init__()

        def mlp(fan_in, width):
            return nn.Sequential(nn.Linear(fan_in, width), nn.GELU(), nn.Linear(width, 1))

        self.probes = nn.ModuleList(mlp(1, 16) for _ in range(d))
        self.predictors = nn.ModuleList(mlp(d - 1, 32) for _ in range(d))

    def forward(self, z):
        z = _standardize(z)
        errors = []
        for j, (probe, predictor) in enumerate(zip(self.probes, self.predictors, strict=True)):
            target = _standardize(probe(z[:, j : j + 1]))
            prediction = predictor(torch.cat([z[:, :j], z[:, j + 1 :]], dim=1))
            errors.append(1 - (2 * target * prediction - prediction.square()).mean())
        return torch.stack(errors)


def _synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def _timed_steps(step, device):
    """Median seconds of a step after one warm-up step, over as many as the budget allows."""
    start = time.perf_counter()
    step()
    _synchronize(device)
    first = time.perf_counter() - start
    times = []
    for _ in range(max(2, min(20, int(_BUDGET_S / max(first, 1e-3))))):
        start = time.perf_counter()
        step()
        _synchronize(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _critic_step(d, device, looped):
    from sklearn_adm import ADMCritic
    from sklearn_adm.game._loop import CriticUpdates
    from sklearn_adm.nn._optim import CriticAdam, make_adam

    torch.manual_seed(0)
    z = torch.randn(_ROWS, d, device=device)
    if looped:
        critic = LoopedCritic(d).to(device)
        optimizer = make_adam(critic.parameters(), 0.02, device)

        def step():
            optimizer.zero_grad()
            critic(z).mean().backward()
            optimizer.step()

        return _timed_steps(step, device)
    with device:  # built where it trains: at d = 16384 its first layer alone is 34 GB
        critic = ADMCritic(d)
    update = CriticUpdates(critic, CriticAdam(critic, 0.02, device), device)
    return _timed_steps(lambda: update(z), device)


def _task(name, device):
    """One of the end-to-end rows: the seconds of one run, in a process that has run nothing
    else (so they include what a first call costs)."""
    import numpy as np

    from sklearn_adm import PICA, DependenceScorer
    from sklearn_adm.datasets import make_pca_vs_pica

    rng = np.random.default_rng(0)
    device = str(device)
    if name == "pica":
        X, _ = make_pca_vs_pica(10_000, random_state=0)
        model = PICA(2, random_state=0, device=device)  # the paper's two components
    elif name == "pica-1024":
        X = rng.standard_normal((3000, 64)) @ rng.standard_normal((64, 1024))
        X += rng.standard_normal(X.shape)
        model = PICA(32, random_state=0, device=device)
    else:
        metric, _, columns = name.partition("-")
        X = rng.standard_normal((5000, int(columns or 64)))
        params = {"predictor_rank": 32} if metric == "adm" and columns else None
        model = DependenceScorer(metric, random_state=0, critic_params=params, device=device)

    def run():
        model.fit(X) if hasattr(model, "fit") else model.per_feature(X)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        run()
        _synchronize(torch.device(device))
    return time.perf_counter() - start


def measure(case):
    """Run one case in this process and return its seconds and peak memory (bytes)."""
    device = torch.device(case["device"])
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    if case["kind"] == "task":
        seconds = _task(case["name"], device)
    else:
        seconds = _critic_step(case["d"], device, looped=case["kind"] == "looped")
    if device.type == "cuda":
        peak = torch.cuda.max_memory_allocated()
    else:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    return {"seconds": seconds, "peak": peak}


def run_case(case):
    done = subprocess.run(
        [sys.executable, __file__, "--case", json.dumps(case)],
        capture_output=True,
        text=True,
    )
    if done.returncode:
        lines = done.stderr.strip().splitlines()
        return {"error": lines[-1] if lines else f"killed (signal {-done.returncode})"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _time(result):
    if "error" in result:
        return "failed"
    seconds = result["seconds"]
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def _memory(result):
    return "failed" if "error" in result else f"{result['peak'] / 2**30:.2f} GiB"


def _ratio(looped, batched):
    if "error" in looped or "error" in batched:
        return "-"
    return f"{looped['seconds'] / batched['seconds']:.1f}x"


def matmul_rate(sizes, hidden=32):
    """The critic step's rate against the CPU's matrix-multiply rate, in one process: a step
    on n = ``_ROWS`` rows does ``4 n d^2 h`` FLOPs in its two large products (the first
    predictor layer forward, ``(n, d) @ (d, d h)``, and its weight gradient,
    ``(d, n) @ (n, d h)``; the rest is ``O(n d h)``), and ``torch.matmul`` runs those two
    products alone, on the same threads."""
    from sklearn_adm import ADMCritic
    from sklearn_adm.nn._critic_step import critic_step
    from sklearn_adm.nn._optim import CriticAdam

    header = "| d | FLOPs of a step | critic step | its rate | two matmuls | their rate | ratio |"
    print(header)
    print("|---:|---:|---:|---:|---:|---:|---:|")
    torch.manual_seed(0)
    for d in sizes:
        critic = ADMCritic(d, critic_hidden=hidden)
        optimizer = CriticAdam(critic, 2e-2, torch.device("cpu"))
        z, x = torch.randn(_ROWS, d), torch.randn(_ROWS, d)
        weight, grad = torch.randn(d, d * hidden), torch.randn(_ROWS, d * hidden)
        step = _median_seconds(critic_step, critic, optimizer, z)
        products = _median_seconds(_two_products, x, weight, grad)
        flops = 4 * _ROWS * d * d * hidden
        print(
            f"| {d} | {flops / 1e9:.3f} G | {step * 1e3:.2f} ms | {flops / step / 1e9:.0f} GFLOP/s "
            f"| {products * 1e3:.2f} ms | {flops / products / 1e9:.0f} GFLOP/s "
            f"| {products / step:.2f} |",
            flush=True,
        )


def _two_products(x, weight, grad):
    return torch.matmul(x, weight), torch.matmul(x.T, grad)


def _median_seconds(work, *args):
    """Median seconds of ``work(*args)`` after a warm-up, over about a second of calls."""
    work(*args)
    first = _once(work, *args)
    return statistics.median([_once(work, *args) for _ in range(max(5, int(1.0 / first)))])


def _once(work, *args):
    start = time.perf_counter()
    work(*args)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rate",
        nargs="*",
        type=int,
        help="only the step's rate against torch.matmul's at these d (e.g. --rate 64 256)",
    )
    parser.add_argument("--case", help=argparse.SUPPRESS)
    parser.add_argument("--sizes", nargs="*", type=int, default=[64, 256, 1024, 2048, 4096])
    parser.add_argument(
        "--looped-up-to",
        type=int,
        default=2048,
        help="largest d for the looped MLPs (each keeps its own copy of the other features "
        "for the backward pass: n * d**2 floats, 17 GB at d = 4096)",
    )
    default = ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]
    parser.add_argument("--devices", nargs="+", default=default)
    names = [name for name, _ in _TASKS]
    parser.add_argument(
        "--tasks",
        nargs="*",
        choices=names,
        default=names,
        help="the end-to-end rows to run (none: the critic rows alone)",
    )
    parser.add_argument("--output", help="also write the table to this Markdown file")
    args = parser.parse_args()
    if args.rate is not None:
        matmul_rate(args.rate or [64, 256])
        return
    if args.case:
        print(json.dumps(measure(json.loads(args.case))))
        return

    header = ["", *(f"{device} {what}" for device in args.devices for what in _COLUMNS)]
    rows = []
    for d in args.sizes:
        row = [f"critic step, d = {d}"]
        for device in args.devices:
            batched = run_case({"kind": "critic", "d": d, "device": device})
            row += [_time(batched), _memory(batched)]
            if d > args.looped_up_to:
                row += ["not run", ""]
                continue
            looped = run_case({"kind": "looped", "d": d, "device": device})
            row += [_time(looped), _ratio(looped, batched)]
        rows.append(row)
        print(" | ".join(row), flush=True)
    for name, label in _TASKS:
        if name not in args.tasks:
            continue
        row = [label]
        for device in args.devices:
            result = run_case({"kind": "task", "name": name, "device": device})
            row += [_time(result), _memory(result), "", ""]
        rows.append(row)
        print(" | ".join(row), flush=True)

    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "---|" + "---:|" * (len(header) - 1),
        *("| " + " | ".join(row) + " |" for row in rows),
    ]
    table = "\n".join(lines)
    print()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads", end="")
    print(f", {torch.cuda.get_device_name()}" if "cuda" in args.devices else "")
    print(table)
    if args.output:
        with open(args.output, "w") as file:
            file.write(table + "\n")


if __name__ == "__main__":
    main()
