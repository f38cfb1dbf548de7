"""ICA on Bach & Jordan's 18 source densities: sklearn_adm.ICA against FastICA and Picard.

For each density, ``--draws`` times: ``--sources`` independent sources of ``--samples`` rows
mixed by a random Gaussian matrix; each method un-mixes the same data in the same run. Prints
the Amari error x 100 (Bach & Jordan's normalisation, 0 = perfect, 100 = worst) per density
and in the mean, the ratio to the better peer, and the median fit time. With ``--mixed``, each
source of a draw has a density drawn at random (their Table 3's second setting), one row per
draw. Also prints in how many fits the critic found dependence to remove in ICA's start
(``n_iter_ > 0``: the game played).

The peers' errors have long tails (FastICA and Picard stop at a wrong maximum on some draws of
(j), (n) and (q)), so a mean over few draws swings: ten draws per density is the default.

    python benchmarks/bench_ica.py [--sources 2] [--samples 1000] [--draws 10] [--first-draw 0]
                                   [--letters abc] [--mixed]
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


#: fits of ICA in which the game played (the critic found dependence in the start)
GAMES = []


def unmix_adm(X, seed):
    ica = ICA(random_state=seed, device="cpu").fit(X)
    GAMES.append(ica.n_iter_ > 0)
    return ica.components_


METHODS = {"FastICA": unmix_fastica, "Picard": unmix_picard, "ICA (ADM)": unmix_adm}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", type=int, default=2)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=10)
    parser.add_argument("--first-draw", type=int, default=0, help="seed of the first draw")
    parser.add_argument("--letters", default=LETTERS)
    parser.add_argument("--mixed", action="store_true", help="a random density per source")
    args = parser.parse_args()
    methods = METHODS
    errors = {name: [] for name in methods}
    seconds = {name: [] for name in methods}
    print(f"{args.sources} sources, {args.samples} samples, {args.draws} draws; Amari x 100")
    print("density " + "".join(f"{name:>11}" for name in methods))
    # a row: one density for every source (its draws averaged), or with --mixed one draw
    draws = range(args.first_draw, args.first_draw + args.draws)
    rows = draws if args.mixed else args.letters
    for row in rows:
        per_draw = {name: [] for name in methods}
        for draw in [row] if args.mixed else draws:
            rng = np.random.default_rng([draw, ord(str(row)[0]), args.sources])
            count = args.sources
            letters = rng.choice(list(LETTERS), count) if args.mixed else [row] * count
            sources = np.column_stack([sample(letter, args.samples, rng) for letter in letters])
            mixing = rng.normal(size=(args.sources, args.sources))
            X = sources @ mixing.T
            for name, unmix in methods.items():
                start = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    unmixing = unmix(X, draw)
                seconds[name].append(time.perf_counter() - start)
                per_draw[name].append(amari_error(unmixing, mixing))
        for name in methods:
            errors[name].append(np.mean(per_draw[name]))
        label = "".join(letters) if args.mixed else f"({row})"
        print(f"{label:8s}" + "".join(f"{np.mean(per_draw[n]):11.1f}" for n in methods))
    means = {name: float(np.mean(values)) for name, values in errors.items()}
    print("mean    " + "".join(f"{means[n]:11.2f}" for n in methods))
    print("fit (median)" + "".join(f"{np.median(seconds[n]):9.3f} s" for n in methods))
    better_peer = min(means["FastICA"], means["Picard"])
    peer = np.minimum(errors["FastICA"], errors["Picard"])
    worst = np.max(np.array(errors["ICA (ADM)"]) - peer)
    print(
        f"ICA / better peer: {means['ICA (ADM)'] / better_peer:.2f} of the mean; worst "
        f"{'draw' if args.mixed else 'density'} {worst:+.1f} points against the better peer"
    )
    print(f"the critic's game played in {sum(GAMES)} of {len(GAMES)} fits")


if __name__ == "__main__":
    main()
