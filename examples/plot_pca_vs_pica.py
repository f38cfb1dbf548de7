"""
PCA, FastICA and PICA on the paper's example
============================================

The paper's Example 1 has two independent factors :math:`v_1, v_2`, uniform with unit
variance, and three *uncorrelated* observations

.. math:: x = [5 v_1,\\ 3 \\cos(2\\pi v_1 / \\sqrt 3),\\ v_2]

with variances 25, 4.5 and 1. With two components:

- PCA keeps the two of largest variance, :math:`x_1` and :math:`x_2`: uncorrelated, but both
  functions of :math:`v_1`;
- FastICA turns PCA's subspace into its least dependent basis, which cannot help: the
  subspace holds one factor only;
- PICA chooses the subspace too: it gives up :math:`x_2`'s variance for :math:`x_3`, and keeps
  one component per factor.
"""

import os

import matplotlib.pyplot as plt
import numpy as np
from sklearn.decomposition import PCA, FastICA

from sklearn_adm import PICA, DependenceScorer
from sklearn_adm.datasets import make_pca_vs_pica

QUICK = os.environ.get("SKLEARN_ADM_EXAMPLES_QUICK") == "1"  # the tests' smoke run

X, _ = make_pca_vs_pica(2_000 if QUICK else 10_000, random_state=0)
X_test, factors = make_pca_vs_pica(5_000, random_state=1)

models = {
    "PCA": PCA(n_components=2),
    "FastICA": FastICA(n_components=2, whiten="unit-variance", random_state=0),
    "PICA": PICA(n_components=2, max_iter=50 if QUICK else 1000, random_state=0),
}
codes = {name: model.fit(X).transform(X_test) for name, model in models.items()}

# %%
# Which observations each method projects onto
# --------------------------------------------
# The absolute weights of each component on :math:`(x_1, x_2, x_3)`, normalised, and the
# distance correlation between the two components on fresh rows (0 if and only if they are
# independent; about 0.02 for independent components at this size).

dcor = DependenceScorer("dcor")
for name, model in models.items():
    weights = np.abs(model.components_)
    weights /= weights.sum(axis=1, keepdims=True)
    print(f"{name:8} component weights {np.round(weights, 2).tolist()}")
    print(f"{'':8} dCor(z1, z2) = {dcor.pairwise(codes[name])[0, 1]:.3f}")

# %%
# The latent spaces, coloured by each factor
# ------------------------------------------
# PCA's second component is a function of :math:`v_1` (a colour gradient along a curve);
# PICA's second component follows :math:`v_2` alone.

fig, axes = plt.subplots(len(models), 2, figsize=(8, 9), sharex="row", sharey="row")
for (name, Z), row in zip(codes.items(), axes, strict=True):
    for j, ax in enumerate(row):
        ax.scatter(Z[:, 0], Z[:, 1], c=factors[:, j], s=2, cmap="viridis")
        ax.set_title(f"{name}, coloured by $v_{j + 1}$")
        ax.set_xlabel("$z_1$")
        ax.set_ylabel("$z_2$")
fig.tight_layout()
