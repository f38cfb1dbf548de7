"""PICA on real data: the variance-independence frontier next to PCA, FastICA and Picard.

Usage: python benchmarks/bench_real.py
           [--data docstrings|stdlib|torch-dask|fortunes|packages|gcloud|NAME|digits|synthetic]
           [--n-components 32]
           [--weights 0.1 0.2 0.4 1 1.2 1.5 2] [--nonlinear 8] [--device cuda]
           [--peers PCA FastICA Picard ICA]
           [--n-samples 100000 --n-features 768] [--held-out 0.3]

Data: ``docstrings``, ``stdlib``, ``torch-dask``, ``fortunes``, ``packages`` and ``gcloud`` are
MiniLM sentence embeddings of numpy/scipy/scikit-learn docstrings, of the standard library's,
of PyTorch's and Dask's, of Debian's fortune-cookie quotations, of Debian packages' one-line
summaries and of the Google Cloud CLI's command descriptions (make them first with
``benchmarks/make_embeddings.py --corpus NAME``; any other ``NAME`` reads
``benchmarks/data/NAME.npz``, such as a larger draw made with ``--per-label`` and ``--out``);
``digits`` is scikit-learn's bundled set;
``synthetic`` is :func:`sklearn_adm.datasets.make_embedding_like` (clustered, heavy-tailed,
unit-norm rows) of any size, for timings at scale. Every method is fitted on the same rows in
one run and judged alike:

* explained variance: ``1 - |X - inverse_transform(transform(X))|^2 / |X - mean|^2``;
* dependence: ``DependenceScorer("hgb")``, the held-out R^2 of gradient-boosted trees
  predicting each component (and its square) from the others, a model family other than the
  ADM critic, with the ratio to FastICA's and to the better of FastICA and Picard (on at most
  10,000 rows);
* kNN: 5-fold accuracy of a 10-nearest-neighbour classifier on the labels, the mean over ten
  shuffled, stratified splits (at most 10,000 rows);
* fit time, and whether the fit stopped at ``max_iter`` (a ConvergenceWarning). On an
  accelerator a short fit runs first and is timed apart: a process's first use of the device
  (its context, its libraries' handles, the first captured graph) is not one fit's cost.

With ``--held-out F`` every method is fitted on the other rows and the three judges read only
a share ``F`` of rows that no method saw (a stratified split, the same for all): an encoder
that made its components independent on its own training rows alone, and not on the data's
distribution, reads more dependence there than on the rows it was fitted on.

``--peers`` chooses the other methods (PCA, FastICA, Picard, and this package's ``ICA``,
made for blind source separation). ``--nonlinear K`` adds a second table: PCA(K) and
NonlinearPICA(K), judged the same way.
Picard (``python-picard``) and the embedding model come with the ``bench`` extra.
"""

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits
from sklearn.decomposition import PCA, FastICA
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import RepeatedStratifiedKFold, cross_val_score, train_test_split
from sklearn.neighbors import KNeighborsClassifier

from sklearn_adm import ICA, PICA, DependenceScorer, NonlinearPICA
from sklearn_adm._runtime.device import resolve_device
from sklearn_adm.datasets import make_embedding_like

#: rows on which the judges (trees, kNN) score a representation, at most
_JUDGED_ROWS = 10_000
#: shuffled 5-fold splits the kNN accuracy is averaged over: one split's reading scatters by
#: about 0.5 points from split to split (measured), as much as the methods differ
_KNN_SPLITS = 10


def load(args):
    if args.data == "digits":
        X, y = load_digits(return_X_y=True)
        return X.astype(np.float64), y
    if args.data == "synthetic":
        return make_embedding_like(args.n_samples, args.n_features, random_state=0)
    path = Path(__file__).parent / "data" / f"{args.data}.npz"
    if not path.exists():
        raise SystemExit(
            f"{path} is missing: run python benchmarks/make_embeddings.py --corpus CORPUS "
            f"--out {path} (CORPUS: docstrings, stdlib, torch-dask, fortunes, packages or gcloud)"
        )
    data = np.load(path)
    return data["X"].astype(np.float64), data["labels"]


def methods(n_components, weights, device, peers):
    if "PCA" in peers:
        yield "PCA", PCA(n_components, random_state=0)
    if "FastICA" in peers:
        yield (
            "FastICA",
            FastICA(n_components, whiten="unit-variance", max_iter=1000, random_state=0),
        )
    if "Picard" in peers:
        try:
            from picard import Picard
        except ImportError:
            print("python-picard is not installed: Picard is left out (pip install -e '.[bench]').")
        else:
            yield "Picard", Picard(n_components, max_iter=1000, random_state=0)
    if "ICA" in peers:  # this package's, for blind source separation
        yield "ICA", ICA(n_components, device=device, random_state=0)
    default = PICA().dependence_weight
    for weight in weights:
        yield (
            f"PICA({weight:g})" + (", default" if weight == default else ""),
            PICA(n_components, dependence_weight=weight, device=device, random_state=0),
        )


def warm_up(device):
    """On an accelerator, one short fit, so that the timed fits do not include the process's
    first use of the device; returns its seconds (None on the CPU)."""
    if resolve_device(device).type == "cpu":
        return None
    X, _ = make_embedding_like(600, 32, random_state=0)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        PICA(4, max_iter=20, device=device, random_state=0).fit(X)
    return time.perf_counter() - start


def judge(models, X, X_judged, y_judged):
    """Fit each model on ``X`` and score it on ``X_judged`` (``X`` itself, or rows no model
    saw); one row per model."""
    rows = np.random.default_rng(0).permutation(len(X_judged))[:_JUDGED_ROWS]
    trees = DependenceScorer("hgb", max_samples=None, random_state=0)
    splits = RepeatedStratifiedKFold(n_splits=5, n_repeats=_KNN_SPLITS, random_state=0)
    results = []
    for name, model in models:
        start = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model.fit(X)
        seconds = time.perf_counter() - start
        stopped = any(issubclass(w.category, ConvergenceWarning) for w in caught)
        Z = model.transform(X_judged)
        residual = X_judged - model.inverse_transform(Z)
        explained = 1 - np.sum(residual**2) / np.sum((X_judged - X_judged.mean(axis=0)) ** 2)
        dependence = trees.per_feature(Z[rows]).mean()
        knn = cross_val_score(KNeighborsClassifier(10), Z[rows], y_judged[rows], cv=splits).mean()
        results.append((name, explained, dependence, knn, seconds, stopped))
        print(f"  {name}: {seconds:.1f} s", flush=True)
    return results


def print_table(results, reference):
    """Ratios of explained variance to the first row's and of dependence to ``reference``'s."""
    first, ref = results[0], dict((r[0], r) for r in results).get(reference, results[0])
    peers = [r[2] for r in results[1:] if r[0] in ("FastICA", "Picard")]
    best_peer = min(peers) if peers else ref[2]
    print(
        f"\n{'method':<20} {'EV':>6} {'x' + first[0]:>8} {'dependence':>10} "
        f"{'x' + reference:>9} {'xbest peer':>10} {'kNN':>6} {'fit (s)':>8}  stopped at max_iter"
    )
    for name, explained, dependence, knn, seconds, stopped in results:
        print(
            f"{name:<20} {explained:6.3f} {explained / first[1]:8.3f} {dependence:10.3f} "
            f"{dependence / ref[2]:9.2f} {dependence / best_peer:10.2f} {knn:6.3f} "
            f"{seconds:8.1f}  {'yes' if stopped else ''}"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data",
        default="docstrings",
        help="digits, synthetic, or the name of an embedding set in benchmarks/data",
    )
    parser.add_argument("--n-components", type=int, default=32)
    parser.add_argument(
        "--weights", type=float, nargs="+", default=[0.1, 0.2, 0.4, 1.0, 1.2, 1.5, 2.0]
    )
    parser.add_argument(
        "--nonlinear",
        type=int,
        default=0,
        metavar="K",
        help="also PCA(K) and NonlinearPICA(K) with default settings",
    )
    parser.add_argument("--device", default="auto")
    parser.add_argument(
        "--peers",
        nargs="*",
        default=["PCA", "FastICA", "Picard"],
        help="the other methods to fit: PCA, FastICA, Picard and this package's ICA",
    )
    parser.add_argument("--n-samples", type=int, default=3_000, help="for --data synthetic")
    parser.add_argument("--n-features", type=int, default=384, help="for --data synthetic")
    parser.add_argument(
        "--held-out",
        type=float,
        default=None,
        metavar="F",
        help="fit on the other rows and judge on this share of rows that no method saw",
    )
    args = parser.parse_args()
    X, y = load(args)
    print(
        f"{args.data}: {X.shape[0]} x {X.shape[1]}, {len(set(y))} labels, "
        f"{args.n_components} components"
    )
    X_judged, y_judged = X, y
    if args.held_out is not None:
        X, X_judged, y, y_judged = train_test_split(
            X, y, test_size=args.held_out, stratify=y, random_state=0
        )
        print(f"fitted on {len(X)} rows, judged on {len(X_judged)} held-out rows")
    seconds = warm_up(args.device)
    if seconds is not None:
        print(
            f"warm-up fit on {resolve_device(args.device)}, not in the times below: {seconds:.1f} s"
        )
    models = methods(args.n_components, args.weights, args.device, args.peers)
    results = judge(models, X, X_judged, y_judged)
    print_table(results, "FastICA")
    if args.nonlinear:
        k = args.nonlinear
        models = [
            (f"PCA({k})", PCA(k, random_state=0)),
            (f"NonlinearPICA({k})", NonlinearPICA(k, device=args.device, random_state=0)),
        ]
        print_table(judge(models, X, X_judged, y_judged), f"PCA({k})")


if __name__ == "__main__":
    main()
