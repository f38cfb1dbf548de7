"""The distance-correlation engine next to the dcor package, in the same run.

Usage: python benchmarks/bench_dcor.py [--quick]

1. 32 features, each against the other 31, n = 2,000: every feature with dcor too.
2. The paper's metric: 64 features against the rest, n = 5,000 (dcor timed on 2 features,
   scaled to 64).
3. pairwise for 256 features, n = 2,000 (dcor timed on 200 pairs, scaled to all 32,640).
4. the permutation test of two samples (4 and 4 columns, one pair dependent), 200
   permutations, n = 2,000 and 5,000: ``DependenceScorer().test(X, Y)`` against dcor's
   ``distance_covariance_test`` and hyppo's ``Dcorr`` (where installed; its permutation
   test, not its chi-square approximation).

Prints times, ratios and the largest difference from dcor (float64).
"""

import argparse
import time
import warnings

import dcor
import numpy as np

from sklearn_adm import DependenceScorer
from sklearn_adm.metrics import distance_correlation_one_vs_rest, distance_correlation_pairwise


def timed(function, *args, **kwargs):
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return result, time.perf_counter() - start


def dcor_one_vs_rest(Z, features):
    return np.array([dcor.distance_correlation(Z[:, j], np.delete(Z, j, axis=1)) for j in features])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="time dcor on 4 of the 32 features")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    distance_correlation_one_vs_rest(rng.normal(size=(10, 3)))  # compile (cached on disk)

    Z = rng.normal(size=(2_000, 32))
    Z[:, 1] = Z[:, 0] ** 2 + 0.5 * Z[:, 1]
    ours, seconds = timed(distance_correlation_one_vs_rest, Z)
    features = range(4) if args.quick else range(32)
    reference, reference_seconds = timed(dcor_one_vs_rest, Z, features)
    reference_seconds *= 32 / len(features)
    print(
        f"1. 32 vs rest, n=2000: ours {seconds:.3f} s, dcor {reference_seconds:.1f} s"
        f"{' (scaled from 4)' if args.quick else ''}, {reference_seconds / seconds:.0f}x faster, "
        f"max |difference| {np.abs(ours[list(features)] - reference).max():.1e}"
    )

    Z = rng.normal(size=(5_000, 64))
    ours, seconds = timed(distance_correlation_one_vs_rest, Z)
    reference, reference_seconds = timed(dcor_one_vs_rest, Z, range(2))
    reference_seconds *= 32
    print(
        f"2. 64 vs rest, n=5000: ours {seconds:.2f} s, dcor {reference_seconds:.0f} s (scaled "
        f"from 2), {reference_seconds / seconds:.0f}x faster, "
        f"max |difference| {np.abs(ours[:2] - reference).max():.1e}"
    )

    Z = rng.normal(size=(2_000, 256))
    ours, seconds = timed(distance_correlation_pairwise, Z)
    pairs = [tuple(rng.choice(256, 2, replace=False)) for _ in range(200)]
    start = time.perf_counter()
    reference = np.array([dcor.distance_correlation(Z[:, j], Z[:, k]) for j, k in pairs])
    reference_seconds = (time.perf_counter() - start) * (256 * 255 / 2) / len(pairs)
    difference = np.abs(np.array([ours[j, k] for j, k in pairs]) - reference).max()
    print(
        f"3. pairwise 256, n=2000: ours {seconds:.1f} s, dcor {reference_seconds:.0f} s (scaled "
        f"from 200 pairs), {reference_seconds / seconds:.0f}x faster, "
        f"max |difference| {difference:.1e}"
    )

    for n in (2_000, 5_000):
        two_sample_test(rng, n)


def two_sample_test(rng, n, permutations=200):
    X = rng.normal(size=(n, 4))
    Y = rng.normal(size=(n, 4))
    Y[:, 0] += np.sin(3 * X[:, 0])
    scorer = DependenceScorer(random_state=0, max_samples=None)
    scorer.test(X[:200], Y[:200], n_permutations=3)  # compile (cached on disk)
    ours, seconds = timed(scorer.test, X, Y, n_permutations=permutations)
    reference, reference_seconds = timed(
        dcor.independence.distance_covariance_test,
        X,
        Y,
        num_resamples=permutations,
        random_state=0,
    )
    line = (
        f"4. two samples, {permutations} permutations, n={n}: ours {seconds:.2f} s "
        f"(p {ours.pvalue:.3f}), dcor {reference_seconds:.1f} s (p {reference.pvalue:.3f}), "
        f"{reference_seconds / seconds:.1f}x faster"
    )
    try:
        from hyppo.independence import Dcorr
    except ImportError:
        print(line)
        return
    with warnings.catch_warnings():  # hyppo advises 1,000 permutations
        warnings.simplefilter("ignore", RuntimeWarning)
        (_, p_value), hyppo_seconds = timed(
            Dcorr().test, X, Y, reps=permutations, workers=1, auto=False
        )
    print(f"{line}; hyppo {hyppo_seconds:.1f} s (p {p_value:.3f})")


if __name__ == "__main__":
    main()
