"""Write a large ``.npy`` file of embedding-like rows, chunk by chunk, for the out-of-core
benchmark (``bench_out_of_core.py``): the model of
:func:`sklearn_adm.datasets.make_embedding_like` (cluster centres plus Student-t noise along
directions of decaying scale, rotated, offset, unit-norm rows), in float32, never held whole.

    python benchmarks/make_large_embeddings.py --rows 20000000 --out /tmp/embeddings-20m.npy

20 M x 384 is 30 GB on disk; it takes a few minutes per 4 M rows on a 2-core CPU.
"""

import argparse
import time

import numpy as np
from numpy.lib.format import open_memmap

#: rows drawn at a time
_CHUNK = 100_000


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--features", type=int, default=384)
    parser.add_argument("--clusters", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    d, rng = args.features, np.random.default_rng(args.seed)
    scales = (np.arange(1, d + 1) ** -0.5).astype(np.float32)
    weights = rng.dirichlet(np.full(args.clusters, 2.0))
    centres = (1.5 * rng.standard_normal((args.clusters, d)) * scales).astype(np.float32)
    rotation = np.linalg.qr(rng.standard_normal((d, d)))[0].astype(np.float32)
    offset = 2.0 * rotation[:, 0]
    out = open_memmap(args.out, mode="w+", dtype=np.float32, shape=(args.rows, d))
    start = time.perf_counter()
    for first in range(0, args.rows, _CHUNK):
        n = min(_CHUNK, args.rows - first)
        labels = rng.choice(args.clusters, size=n, p=weights)
        noise = rng.standard_t(5, size=(n, d)).astype(np.float32) * scales
        rows = (centres[labels] + noise) @ rotation.T + offset
        out[first : first + n] = rows / np.linalg.norm(rows, axis=1, keepdims=True)
        if first // _CHUNK % 20 == 0:
            print(f"{first + n:,} rows, {time.perf_counter() - start:.0f} s", flush=True)
    out.flush()
    print(f"wrote {args.out}: {args.rows:,} x {d} float32 in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
