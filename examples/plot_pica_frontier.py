"""
The variance-independence frontier, and picking a point on it
=============================================================

PCA keeps the most variance; FastICA turns PCA's subspace into its least dependent basis;
:class:`~sklearn_adm.PICA` also chooses the subspace, giving up some variance for
components that can be made more independent, as much as ``dependence_weight`` asks.

This example compares them on scikit-learn's digits (16 components) in one
:class:`~sklearn.model_selection.GridSearchCV` over a pipeline whose reduction step is
itself a parameter, scoring every candidate by two metrics on the held-out fold:

- the share of variance that the reconstruction explains;
- independence judged by gradient-boosted trees, ``DependenceScorer("hgb")``: the held-out
  :math:`R^2` of each component and of its square predicted from the other components. It is
  a model family other than the ADM critic that PICA trained against, so PICA cannot pass
  it by fooling its own critic.

Some pixels of the digits are 0 in every image: a
:class:`~sklearn.feature_selection.VarianceThreshold` step drops such columns first (with
them, FastICA's whitening lost rank on one of the folds and its explained variance fell
from 0.84 to 0.73).

A custom ``refit`` rule then picks the most independent candidate that keeps at least 95 %
of the best explained variance.
"""

import os
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.decomposition import PCA, FastICA
from sklearn.feature_selection import VarianceThreshold
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.pipeline import Pipeline

from sklearn_adm import PICA, DependenceScorer

QUICK = os.environ.get("SKLEARN_ADM_EXAMPLES_QUICK") == "1"  # the tests' smoke run
N_COMPONENTS = 4 if QUICK else 16
X = load_digits().data
if QUICK:
    X = X[:300]
X_train, X_test = train_test_split(X, test_size=0.3, random_state=0)


def explained_variance(estimator, X, y=None):
    """Scorer: share of the variance of ``X`` that the reconstruction explains."""
    residual = X - estimator.inverse_transform(estimator.transform(X))
    return 1.0 - np.sum(residual**2) / np.sum((X - X.mean(axis=0)) ** 2)


def most_independent_keeping(share_of_best):
    """A ``refit`` rule: the most independent candidate whose explained variance is at least
    ``share_of_best`` times the best candidate's."""

    def choose(cv_results):
        variance = np.asarray(cv_results["mean_test_explained_variance"])
        score = np.array(cv_results["mean_test_independence"], dtype=float)  # a copy
        score[variance < share_of_best * variance.max()] = -np.inf
        return int(np.argmax(score))

    return choose


weights = [0.5] if QUICK else [0.2, 0.5, 1.0]
search = GridSearchCV(
    Pipeline([("drop_constant", VarianceThreshold()), ("reduce", PCA(N_COMPONENTS))]),
    [
        {"reduce": [PCA(N_COMPONENTS), FastICA(N_COMPONENTS, max_iter=1000, random_state=0)]},
        {
            "reduce": [PICA(N_COMPONENTS, max_iter=20 if QUICK else 1000, random_state=0)],
            "reduce__dependence_weight": weights,
        },
    ],
    scoring={
        "explained_variance": explained_variance,
        # higher is more independent: minus the trees' held-out R^2
        "independence": DependenceScorer("hgb", max_samples=None, random_state=0),
    },
    refit=most_independent_keeping(0.95),
    cv=2,
)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # FastICA on pixels; the smoke run's short fits
    search.fit(X_train)

# %%
# The candidates
# --------------

results = search.cv_results_
names = []
for params in results["params"]:
    reduce = params["reduce"]
    weight = params.get("reduce__dependence_weight")
    names.append(type(reduce).__name__ + ("" if weight is None else f"({weight:g})"))
variance = results["mean_test_explained_variance"]
dependence = -results["mean_test_independence"]
for name, ev, dep in zip(names, variance, dependence, strict=True):
    print(f"{name:>10}: explained variance {ev:.3f}, dependence {dep:.3f}")
chosen = search.best_estimator_
print(
    f"chosen: {names[search.best_index_]}; on the test rows: explained variance "
    f"{explained_variance(chosen, X_test):.3f}, dependence "
    f"{-search.scorer_['independence'](chosen, X_test):.3f}"
)

# %%
# The frontier
# ------------
# Each PICA point is labelled with its ``dependence_weight``. Points further down (less
# dependent) and further right (more variance) are better.

fig, ax = plt.subplots(figsize=(6, 4.5))
pica = [i for i, name in enumerate(names) if name.startswith("PICA")]
ax.plot(variance[pica], dependence[pica], "o-", color="C2", label="PICA")
for i in pica:
    label = names[i][5:-1]
    ax.annotate(label, (variance[i], dependence[i]), textcoords="offset points", xytext=(5, 5))
for marker, name in (("s", "PCA"), ("^", "FastICA")):
    i = names.index(name)
    ax.plot(variance[i], dependence[i], marker, markersize=9, label=name)
ax.set_xlabel("explained variance (held-out folds)")
ax.set_ylabel("dependence: trees' held-out $R^2$")
ax.set_title(f"digits, {N_COMPONENTS} components")
ax.legend()
fig.tight_layout()
