"""What ADMRegularizer adds to a training step, side by side with the step without it.

For features of width d, a batch of 256 images of 32x32 pixels goes through the gallery's
CNN (its last convolution widened to d channels) and a linear head; the step is timed with
cross-entropy alone and with ``reg.critic_step(z)`` plus ``reg.loss(z)`` added, in the same
run (alternated, best of three rounds), and the ratio printed; then the regulariser's own
step on random features (no CNN).

    python benchmarks/bench_regularizer.py [--device cuda] [--repeats 20]
"""

import argparse
import time

import torch
from torch import nn

from sklearn_adm import ADMRegularizer


def make_encoder(width):
    def block(fan_in, fan_out):
        conv = nn.Conv2d(fan_in, fan_out, 3, padding=1)
        return [conv, nn.BatchNorm2d(fan_out), nn.ReLU(), nn.MaxPool2d(2)]

    return nn.Sequential(
        *block(3, 32),
        *block(32, 64),
        *block(64, 64),
        nn.Conv2d(64, width, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
    )


def seconds_per_call(step, repeats, device):
    for _ in range(3):
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(repeats):
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / repeats


def time_width(width, x, y, repeats, device):
    """Seconds of a CNN step without and with the regulariser, and of the regulariser alone."""
    encoder, head = make_encoder(width).to(device), nn.Linear(width, 4).to(device)
    optimizer = torch.optim.Adam([*encoder.parameters(), *head.parameters()], lr=1e-3)
    reg = ADMRegularizer(width, device=device)

    def step(adm):
        z = encoder(x)
        loss = nn.functional.cross_entropy(head(z), y)
        if adm:
            reg.critic_step(z)
            loss = loss + reg.loss(z)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    features = torch.randn(len(x), width, device=device, requires_grad=True)

    def regulariser_alone():
        reg.critic_step(features)
        reg.loss(features).backward()

    # alternated, the best of three rounds: a shared machine's noise hits both alike
    rounds = [
        [seconds_per_call(lambda adm=adm: step(adm), repeats, device) for adm in (False, True)]
        for _ in range(3)
    ]
    plain, with_adm = (min(times) for times in zip(*rounds, strict=True))
    return plain, with_adm, seconds_per_call(regulariser_alone, repeats, device)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    device = torch.device(args.device)
    torch.manual_seed(0)
    x = torch.rand(256, 3, 32, 32, device=device)
    y = torch.randint(4, (256,), device=device)
    print(f"device {device}, batch 256, {torch.get_num_threads()} CPU threads")
    print("   d   CNN step   + ADM   ratio   regulariser alone")
    for width in (32, 128, 512):
        plain, with_adm, alone = time_width(width, x, y, args.repeats, device)
        print(
            f"{width:4d} {1e3 * plain:8.1f} ms {1e3 * with_adm:6.1f} ms "
            f"{with_adm / plain:6.2f}x {1e3 * alone:12.1f} ms"
        )


if __name__ == "__main__":
    main()
