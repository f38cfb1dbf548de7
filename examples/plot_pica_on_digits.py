"""
PCA's and PICA's components of digit images
============================================

PCA's components of image data are uncorrelated but far from independent. On
scikit-learn's 8 x 8 digits, this example fits PCA and :class:`~sklearn_adm.PICA` with 8
components, compares the variance they explain and the dependence left between their
components on held-out rows, and draws each component as an image.
"""

import os

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.decomposition import PCA
from sklearn.model_selection import train_test_split

from sklearn_adm import PICA, DependenceScorer

QUICK = os.environ.get("SKLEARN_ADM_EXAMPLES_QUICK") == "1"  # the tests' smoke run
X = load_digits().data
X_train, X_test = train_test_split(X[:300] if QUICK else X, test_size=0.3, random_state=0)
models = {
    "PCA": PCA(n_components=8),
    "PICA": PICA(n_components=8, max_iter=20 if QUICK else 1000, random_state=0),
}

# %%
# Variance and dependence on held-out rows
# ----------------------------------------
# Dependence is the mean one-vs-rest distance correlation (the paper's metric) and the
# boosted trees' held-out :math:`R^2` (a judge from another model family than PICA's critic).

judges = {
    "dCor": DependenceScorer("dcor"),
    "trees": DependenceScorer("hgb", max_samples=None, random_state=0),
}
for name, model in models.items():
    Z = model.fit(X_train).transform(X_test)
    residual = X_test - model.inverse_transform(Z)
    explained = 1 - np.sum(residual**2) / np.sum((X_test - X_test.mean(axis=0)) ** 2)
    readings = ", ".join(f"{judge} {scorer.score(Z):.3f}" for judge, scorer in judges.items())
    print(f"{name}: explained variance {explained:.3f}; dependence: {readings}")

# %%
# The components as images
# ------------------------
# PICA's components are the un-mixing directions (``components_``), each scaled to the
# variance it explains, as PCA's are.

fig, axes = plt.subplots(2, 8, figsize=(12, 3.4))
for row, (name, model) in zip(axes, models.items(), strict=True):
    for k, ax in enumerate(row):
        ax.imshow(model.components_[k].reshape(8, 8), cmap="RdBu_r")
        ax.set_xticks([])
        ax.set_yticks([])
    row[0].set_ylabel(name)
fig.tight_layout()
