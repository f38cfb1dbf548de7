"""ICA on Bach & Jordan's 18 source densities: sklearn_adm.ICA against FastICA and Picard.

For each density, ``--draws`` times: ``--sources`` independent sources of ``--samples`` rows
mixed by a random Gaussian matrix; each method un-mixes the same data in the same run. Prints
the Amari error x 100 (Bach & Jordan's normalisation, 0 = perfect, 100 = worst) per density
and in the mean, the ratio to the better peer, and the median fit time.

    python benchmarks/bench_ica.py [--sources 2] [--samples 1000] [--draws 3] [--letters abc]
"""

import argparse
import time
import warnings

import numpy as np
from ica_sources import LETTERS, amari_error, sample
from picard import picard
from sklearn.decomposition import FastICA

from sklearn_adm import ICA


def unmix_fastica(X, seed):
    return FastICA(X.shape[1], whiten="unit-variance", random_state=seed).fit(X).components_


def unmix_picard(X, seed):
    whitening, unmixing, _ = picard(X.T, n_components=X.shape[1], random_state=seed)
    return unmixing @ whitening


def unmix_adm(X, seed):
    return ICA(random_state=seed, device="cpu").fit(X).components_


METHODS = {"FastICA": unmix_fastica, "Picard": unmix_picard, "ICA (ADM)": unmix_adm}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", type=int, default=2)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=3)
    parser.add_argument("--letters", default=LETTERS)
    args = parser.parse_args()
    errors = {name: [] for name in METHODS}
    seconds = {name: [] for name in METHODS}
    print(f"{args.sources} sources, {args.samples} samples, {args.draws} draws; Amari x 100")
    print("density " + "".join(f"{name:>11}" for name in METHODS))
    for letter in args.letters:
        per_draw = {name: [] for name in METHODS}
        for draw in range(args.draws):
            rng = np.random.default_rng([draw, ord(letter), args.sources])
            sources = np.column_stack(
                [sample(letter, args.samples, rng) for _ in range(args.sources)]
            )
            mixing = rng.normal(size=(args.sources, args.sources))
            X = sources @ mixing.T
            for name, unmix in METHODS.items():
                start = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    unmixing = unmix(X, draw)
                seconds[name].append(time.perf_counter() - start)
                per_draw[name].append(amari_error(unmixing, mixing))
        for name in METHODS:
            errors[name].append(np.mean(per_draw[name]))
        print(f"({letter})    " + "".join(f"{np.mean(per_draw[n]):11.1f}" for n in METHODS))
    means = {name: float(np.mean(values)) for name, values in errors.items()}
    print("mean    " + "".join(f"{means[n]:11.2f}" for n in METHODS))
    print("fit (median)" + "".join(f"{np.median(seconds[n]):9.3f} s" for n in METHODS))
    better_peer = min(means["FastICA"], means["Picard"])
    peer = np.minimum(errors["FastICA"], errors["Picard"])
    worst = np.max(np.array(errors["ICA (ADM)"]) - peer)
    print(
        f"ICA / better peer: {means['ICA (ADM)'] / better_peer:.2f} of the mean; worst density "
        f"{worst:+.1f} points against the better peer on it"
    )


if __name__ == "__main__":
    main()
