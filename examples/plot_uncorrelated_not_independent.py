"""
Uncorrelated is not independent
===============================

Three data sets whose columns are uncorrelated yet dependent, each a step up the hierarchy
of the paper's Table 1, scored by four of :class:`~sklearn_adm.DependenceScorer`'s metrics:

- ``"pearson"``: the multiple correlation of each column with the others (linear);
- ``"dcor"``: distance correlation of each column with the others;
- ``"adm"`` without probes (``critic_params={"probes": False}``): predictability
  minimisation, which predicts each column itself from the others, so it sees dependence of
  the conditional mean only;
- ``"adm"``: the full critic, whose probes also try functions of each column (its square,
  its sign, ...).

The data sets:

- :math:`(x, x^2)` with :math:`x` uniform on :math:`[-1, 1]`: uncorrelated, and each column
  is a function of the other (through :math:`|x|`);
- a point on the unit circle, :math:`(\\cos\\theta, \\sin\\theta)`: each column is
  *mean-independent* of the other (the conditional mean is 0 by symmetry), yet the squares
  add up to 1;
- :math:`x_3 = \\mathrm{frac}(x_1 + x_2)` with :math:`x_1, x_2` uniform on :math:`[0, 1]`
  (the paper's App. F.1): *pairwise* independent, but :math:`x_3` is a function of
  :math:`(x_1, x_2)` together.
"""

import os

import matplotlib.pyplot as plt
import numpy as np

from sklearn_adm import DependenceScorer

QUICK = os.environ.get("SKLEARN_ADM_EXAMPLES_QUICK") == "1"  # the tests' smoke run
n = 500 if QUICK else 3_000
rng = np.random.default_rng(0)
x = rng.uniform(-1, 1, n)
theta = rng.uniform(0, 2 * np.pi, n)
x1, x2 = rng.uniform(size=(2, n))
datasets = {
    "$(x, x^2)$": np.c_[x, x**2],
    "circle": np.c_[np.cos(theta), np.sin(theta)],
    "frac$(x_1 + x_2)$": np.c_[x1, x2, np.mod(x1 + x2, 1.0)],
}
critic_steps = {"max_iter": 50} if QUICK else {}
scorers = {
    "Pearson": DependenceScorer("pearson"),
    "distance correlation": DependenceScorer("dcor"),
    "ADM, no probes": DependenceScorer(
        "adm", random_state=0, critic_params={"probes": False, **critic_steps}
    ),
    "ADM": DependenceScorer("adm", random_state=0, critic_params=critic_steps),
}

# %%
# Each column against all the others
# ----------------------------------
# ``per_feature`` scores each column against all the other columns together; the table
# shows the mean over columns. Pearson reads nothing anywhere. Distance correlation sees
# :math:`(x, x^2)` and the circle. The critic without probes sees :math:`(x, x^2)` (the
# mean of :math:`x^2` given :math:`x` varies) but not the circle; with probes it reads the
# circle as fully dependent (:math:`\sin^2\theta = 1 - \cos^2\theta`). For the triple, the
# learned critic sees what a function of two columns together is.

scores = {
    data: {metric: scorer.score(Z) for metric, scorer in scorers.items()}
    for data, Z in datasets.items()
}
print(f"{'':20}" + "".join(f"{metric:>22}" for metric in scorers))
for data, row in scores.items():
    print(f"{data:20}" + "".join(f"{value:>22.3f}" for value in row.values()))

# %%
# Pairwise, the triple looks independent
# --------------------------------------
# Distance correlation of every *pair* of the triple is near 0: pairwise measures cannot
# see a dependence on two columns together.

print(np.round(DependenceScorer("dcor").pairwise(datasets["frac$(x_1 + x_2)$"]), 3))

# %%
# The figure
# ----------

fig, axes = plt.subplots(1, 4, figsize=(13, 3.4))
axes[0].scatter(*datasets["$(x, x^2)$"].T, s=2)
axes[0].set_title("$(x, x^2)$")
axes[1].scatter(*datasets["circle"].T, s=2)
axes[1].set_aspect("equal")
axes[1].set_title("circle")
triple = datasets["frac$(x_1 + x_2)$"]
axes[2].scatter(triple[:, 0], triple[:, 2], s=2, c=triple[:, 1], cmap="viridis")
axes[2].set_title("$x_3$ against $x_1$, coloured by $x_2$")
width = 0.8 / len(scorers)
for k, metric in enumerate(scorers):
    values = [scores[data][metric] for data in datasets]
    axes[3].bar(np.arange(len(datasets)) + k * width, values, width, label=metric)
axes[3].set_xticks(np.arange(len(datasets)) + 0.4 - width / 2, list(datasets))
axes[3].set_ylabel("mean dependence")
axes[3].legend(fontsize=7)
fig.tight_layout()
