"""
NonlinearPICA on a nonlinear mixture
====================================

Two independent uniform factors :math:`s_1, s_2` are mixed nonlinearly into five features
(:func:`sklearn_adm.datasets.make_nonlinear_mixture`): every feature but the products mixes
both factors. Each method keeps two components:

- PCA: a linear projection, which cannot undo the mixing;
- a plain autoencoder: :class:`~sklearn_adm.NonlinearPICA` with ``dependence_weight=0``,
  the same network trained on reconstruction alone. It reconstructs well, but nothing asks
  its bottleneck to separate the factors;
- :class:`~sklearn_adm.NonlinearPICA`: the same network trained against the ADM critic. Its
  components are independent, and each follows one factor.

Nonlinear ICA is not identifiable in general (any invertible function of a component is as
independent, and some maps mix the factors into independent components); NonlinearPICA
prefers, among its starts, the decoder whose Jacobian has the most orthogonal columns. See
the user guide.
"""

import os

import matplotlib.pyplot as plt
import numpy as np
from sklearn.decomposition import PCA

from sklearn_adm import DependenceScorer, NonlinearPICA
from sklearn_adm.datasets import make_nonlinear_mixture

QUICK = os.environ.get("SKLEARN_ADM_EXAMPLES_QUICK") == "1"  # the tests' smoke run
X, _ = make_nonlinear_mixture(500 if QUICK else 5_000, random_state=0)
X_test, factors = make_nonlinear_mixture(2_000, random_state=1)

budget = {"max_iter": 30} if QUICK else {}
models = {
    "PCA": PCA(n_components=2),
    "plain autoencoder": NonlinearPICA(
        n_components=2, dependence_weight=0, random_state=0, **budget
    ),
    "NonlinearPICA": NonlinearPICA(n_components=2, random_state=0, **budget),
}

# %%
# Reconstruction and dependence on fresh rows
# -------------------------------------------
# :math:`R^2` of the reconstruction, the distance correlation between the two components,
# and of each component with each factor.

dcor = DependenceScorer("dcor")
codes = {}
print(f"{'method':18} {'R^2':>6} {'dCor(z1, z2)':>13}   dCor with (s1, s2), per component")
for name, model in models.items():
    Z = codes[name] = model.fit(X).transform(X_test)
    residual = ((X_test - model.inverse_transform(Z)) ** 2).sum()
    r2 = 1 - residual / ((X_test - X_test.mean(axis=0)) ** 2).sum()
    with_factors = dcor.pairwise(np.c_[Z, factors])[:2, 2:]
    print(
        f"{name:18} {r2:>6.3f} {dcor.pairwise(Z)[0, 1]:>13.3f}   {with_factors.round(2).tolist()}"
    )

# %%
# The latent spaces, coloured by each factor
# ------------------------------------------
# NonlinearPICA's first component follows one factor and its second the other: the colour
# of each factor changes along one axis only.

fig, axes = plt.subplots(len(models), 2, figsize=(8, 9))
for (name, Z), row in zip(codes.items(), axes, strict=True):
    for j, ax in enumerate(row):
        ax.scatter(Z[:, 0], Z[:, 1], c=factors[:, j], s=2, cmap="viridis")
        ax.set_title(f"{name}, coloured by $s_{j + 1}$")
fig.tight_layout()
