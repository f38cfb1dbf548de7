"""
Tuning PICA in a pipeline with GridSearchCV
===========================================

:class:`~sklearn_adm.PICA` is a scikit-learn transformer, so it goes into a
:class:`~sklearn.pipeline.Pipeline` and is tuned like any other step. Here a
nearest-neighbour classifier reads PICA's components of scikit-learn's digits, and
:class:`~sklearn.model_selection.GridSearchCV` tries several ``dependence_weight``
values (0 is PCA), scoring each by two metrics at once:

- the classifier's accuracy;
- the independence of the components, by :class:`~sklearn_adm.DependenceScorer` used as a
  scorer: it scores ``-dependence`` of the representation (higher is more independent), and
  for a pipeline that ends in a classifier it reads the output of the steps before it.

``refit="accuracy"`` keeps the most accurate setting; the table shows what each setting
costs in accuracy for the independence it buys.

The search runs its 9 fits in two worker processes (``n_jobs=2``). joblib gives each worker
one thread per core it may use, and every fit computes on at most the threads its process
allows and the cores that other processes leave free, so parallel fits never oversubscribe
the CPU. On a 2-core laptop CPU such a search (3 settings x 3 folds, 16 components) took
about 20 s with ``n_jobs=2`` and 28 s with ``n_jobs=1`` (see the benchmarks).
"""

import os
import time
import warnings

import matplotlib.pyplot as plt
from sklearn.datasets import load_digits
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline

from sklearn_adm import PICA, DependenceScorer

QUICK = os.environ.get("SKLEARN_ADM_EXAMPLES_QUICK") == "1"  # the tests' smoke run
X, y = load_digits(return_X_y=True)
if QUICK:
    X, y = X[:300], y[:300]
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0)

pipeline = make_pipeline(
    PICA(n_components=8 if QUICK else 16, max_iter=20 if QUICK else 1000, random_state=0),
    KNeighborsClassifier(n_neighbors=5),
)
search = GridSearchCV(
    pipeline,
    {"pica__dependence_weight": [0.0, 0.5, 2.0]},
    scoring={"accuracy": "accuracy", "independence": DependenceScorer("dcor")},
    refit="accuracy",
    cv=2 if QUICK else 3,
    n_jobs=1 if QUICK else 2,  # the smoke run spares the workers their start
)
start = time.perf_counter()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the smoke run stops early, with ConvergenceWarnings
    search.fit(X_train, y_train)
fits = len(search.cv_results_["params"]) * search.n_splits_
print(f"{fits} fits and the refit: {time.perf_counter() - start:.0f} s")

# %%
# The cross-validated scores
# --------------------------
# Dependence here is the mean distance correlation of each component with the others, on
# the held-out fold.

results = search.cv_results_
weights = [params["pica__dependence_weight"] for params in results["params"]]
accuracy = results["mean_test_accuracy"]
dependence = -results["mean_test_independence"]
print(f"{'dependence_weight':>18} {'accuracy':>9} {'dependence':>11}")
for weight, acc, dep in zip(weights, accuracy, dependence, strict=True):
    print(f"{weight:>18g} {acc:>9.3f} {dep:>11.3f}")
print(f"refitted with {search.best_params_}: test accuracy {search.score(X_test, y_test):.3f}")

# %%
# Accuracy against dependence
# ---------------------------

fig, ax = plt.subplots(figsize=(5.5, 4))
ax.plot(dependence, accuracy, "o-")
for weight, dep, acc in zip(weights, dependence, accuracy, strict=True):
    ax.annotate(f"{weight:g}", (dep, acc), textcoords="offset points", xytext=(5, 5))
ax.set_xlabel("dependence (mean one-vs-rest distance correlation)")
ax.set_ylabel("accuracy (5-NN)")
ax.set_title(f"PICA({pipeline[0].n_components}) + 5-NN on digits, by dependence_weight")
fig.tight_layout()
