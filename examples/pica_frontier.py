"""The variance-independence frontier: PCA, FastICA and PICA, and picking a point with
GridSearchCV.

PCA keeps the most variance; FastICA turns PCA's subspace into its least dependent basis;
PICA gives up some variance for subspaces whose components can be made more independent,
as much as ``dependence_weight`` asks. This script

1. fits all three on 70 % of scikit-learn's digits (16 components) and plots, on the other
   30 %, the explained variance against the dependence that gradient-boosted trees find
   (``DependenceScorer("hgb")``: held-out R^2 of each component and of its square from the
   others; a model family other than the ADM critic PICA trained against);
2. tunes ``dependence_weight`` with ``GridSearchCV`` scoring both explained variance and
   independence, and refits the most independent setting that keeps at least 95 % of PCA's
   explained variance.

Run: python examples/pica_frontier.py  (several minutes on a 2-core CPU; --quick uses fewer
weights). Writes pica_frontier.png.
"""

import argparse
import warnings

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.decomposition import PCA, FastICA  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.model_selection import GridSearchCV, train_test_split  # noqa: E402

from sklearn_adm import PICA, DependenceScorer  # noqa: E402

N_COMPONENTS = 16


def explained_variance(estimator, X, y=None):
    """Scorer: share of the variance of ``X`` that the reconstruction explains."""
    residual = X - estimator.inverse_transform(estimator.transform(X))
    return 1.0 - np.sum(residual**2) / np.sum((X - X.mean(axis=0)) ** 2)


#: higher is more independent: minus the trees' held-out R^2, in [-1, 0]
independence = DependenceScorer("hgb", max_samples=None, random_state=0)


def frontier(X_train, X_test, weights):
    models = {
        "PCA": PCA(N_COMPONENTS),
        "FastICA": FastICA(N_COMPONENTS, whiten="unit-variance", max_iter=1000, random_state=0),
    }
    models.update(
        {f"PICA({w:g})": PICA(N_COMPONENTS, dependence_weight=w, random_state=0) for w in weights}
    )
    points = {}
    for name, model in models.items():
        model.fit(X_train)
        points[name] = (explained_variance(model, X_test), -independence(model, X_test))
        print(
            f"{name:>10}: explained variance {points[name][0]:.3f}, "
            f"dependence {points[name][1]:.3f}"
        )
    return points


def most_independent_keeping(share_of_best):
    """A ``refit`` rule: the most independent candidate whose explained variance is at least
    ``share_of_best`` times the best candidate's."""

    def choose(cv_results):
        variance = np.asarray(cv_results["mean_test_explained_variance"])
        score = np.array(cv_results["mean_test_independence"], dtype=float)  # a copy
        score[variance < share_of_best * variance.max()] = -np.inf
        return int(np.argmax(score))

    return choose


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer weights")
    args = parser.parse_args()
    weights = [0.1, 0.5, 2.0] if args.quick else [0.1, 0.3, 0.5, 1.0, 2.0]
    X = load_digits().data
    X_train, X_test = train_test_split(X, test_size=0.3, random_state=0)
    warnings.simplefilter("ignore", ConvergenceWarning)  # FastICA on pixel data

    points = frontier(X_train, X_test, weights)
    fig, ax = plt.subplots(figsize=(6, 4.5))
    pica = [points[f"PICA({w:g})"] for w in weights]
    ax.plot(*zip(*pica, strict=True), "o-", color="C2", label="PICA, dependence_weight")
    for w, (variance, dependence) in zip(weights, pica, strict=True):
        ax.annotate(f"{w:g}", (variance, dependence), textcoords="offset points", xytext=(5, 5))
    for name, marker in (("PCA", "s"), ("FastICA", "^")):
        ax.plot(*points[name], marker, markersize=9, label=name)
    ax.set_xlabel("explained variance (held-out rows)")
    ax.set_ylabel("dependence: trees' held-out R$^2$ (lower is better)")
    ax.set_title(f"digits, {N_COMPONENTS} components")
    ax.legend()
    fig.tight_layout()
    fig.savefig("pica_frontier.png", dpi=120)
    print("wrote pica_frontier.png")

    search = GridSearchCV(
        PICA(N_COMPONENTS, random_state=0),
        {"dependence_weight": [0.0, *weights[:3]]},  # 0 is PCA: the variance to keep 95 % of
        scoring={"explained_variance": explained_variance, "independence": independence},
        refit=most_independent_keeping(0.95),
        cv=2,
    )
    search.fit(X_train)
    results = search.cv_results_
    for i, params in enumerate(results["params"]):
        print(
            f"dependence_weight={params['dependence_weight']:<4g} "
            f"explained variance {results['mean_test_explained_variance'][i]:.3f}, "
            f"dependence {-results['mean_test_independence'][i]:.3f}"
        )
    print(
        f"chosen: {search.best_params_}; on the test rows: explained variance "
        f"{explained_variance(search.best_estimator_, X_test):.3f}, dependence "
        f"{-independence(search.best_estimator_, X_test):.3f}"
    )


if __name__ == "__main__":
    main()
