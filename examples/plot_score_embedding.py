"""
Scoring the dependence of an embedding, with its floor
======================================================

How dependent are the dimensions of an embedding? :class:`~sklearn_adm.DependenceScorer`
scores each column against all the others. Distance correlation is a biased statistic:
columns that are truly independent do not score 0, and the bias grows with the number of
columns and shrinks with the number of rows. ``test`` answers both questions at once:
it shuffles every column on its own (which keeps each column's values and destroys any
dependence between columns) and returns

- a permutation p-value per column, for the null that the columns are mutually independent;
- the *floor*: the mean score of the shuffled data, what independent columns of the same
  marginals and size would score. Only the part of a score above its floor is dependence.

The embedding here is :func:`~sklearn_adm.datasets.make_embedding_like`: rows with the
character of sentence embeddings (clustered, heavy-tailed, unit-norm), reduced to 16
components by PCA and by FastICA.
"""

import os

import matplotlib.pyplot as plt
import numpy as np
from sklearn.decomposition import PCA, FastICA

from sklearn_adm import DependenceScorer
from sklearn_adm.datasets import make_embedding_like

QUICK = os.environ.get("SKLEARN_ADM_EXAMPLES_QUICK") == "1"  # the tests' smoke run
X, _ = make_embedding_like(400 if QUICK else 2_000, 128, random_state=0)
embeddings = {
    "PCA(16)": PCA(16).fit_transform(X),
    "FastICA(16)": FastICA(16, whiten="unit-variance", random_state=0).fit_transform(X),
}
scorer = DependenceScorer("dcor_sq", random_state=0)

# %%
# Scores, floors and p-values
# ---------------------------

results = {}
for name, Z in embeddings.items():
    scores = scorer.per_feature(Z)
    result = scorer.test(Z, n_permutations=5 if QUICK else 100)
    p_values, floor = result.pvalue, result.null_mean
    results[name] = scores, floor
    print(
        f"{name}: mean score {scores.mean():.4f}, mean floor {floor.mean():.4f}, "
        f"above the floor {np.mean(scores - floor):.4f}; "
        f"{np.sum(p_values <= 0.05)} of {len(p_values)} columns with p <= 0.05"
    )

# %%
# Each column against its floor
# -----------------------------

fig, axes = plt.subplots(1, len(results), figsize=(11, 3.6), sharey=True)
for ax, (name, (scores, floor)) in zip(axes, results.items(), strict=True):
    columns = np.arange(len(scores))
    ax.bar(columns, scores, color="C0", label="score (one-vs-rest dCor$^2$)")
    ax.plot(columns, floor, "k_", markersize=12, label="floor (shuffled columns)")
    ax.set_title(name)
    ax.set_xlabel("column")
axes[0].set_ylabel("dCor$^2$ with the other columns")
axes[0].legend(fontsize=8)
fig.tight_layout()
