"""
Separating mixed signals: FastICA and ICA
=========================================

Three signals are recorded by three sensors, each sensor hearing a different mix:

- a chirp (a tone rising in pitch);
- a pulse train, on a quarter of the time, with a little noise: its values form two clusters
  of unequal weight, Bach & Jordan's density (j);
- a slower pulse train, on three quarters of the time, with noise too.

FastICA un-mixes by maximising a fixed contrast (log cosh), which sees such skewed
two-cluster densities poorly, so its components stay mixtures. :class:`~sklearn_adm.ICA`
starts from contrasts that adapt to each density (the m-spacing entropy, then the likelihood
under each component's fitted score) and turns its rotation against an ADM critic that learns
the dependence left between the components.
"""

import os

import matplotlib.pyplot as plt
import numpy as np
from scipy import signal
from sklearn.decomposition import FastICA

from sklearn_adm import ICA, DependenceScorer

QUICK = os.environ.get("SKLEARN_ADM_EXAMPLES_QUICK") == "1"  # the tests' smoke run

rng = np.random.default_rng(0)
t = np.linspace(0, 8, 2000)
sources = np.c_[
    signal.chirp(t, f0=0.3, f1=2.0, t1=8),
    signal.square(2 * np.pi * 1.3 * t, duty=0.25) + 0.1 * rng.normal(size=t.size),
    signal.square(2 * np.pi * 0.55 * t, duty=0.75) + 0.1 * rng.normal(size=t.size),
]
sources = (sources - sources.mean(axis=0)) / sources.std(axis=0)
mixing = np.array([[1.0, 0.8, 0.6], [0.5, 1.0, -0.7], [-0.6, 0.4, 1.0]])
X = sources @ mixing.T

# Samples of a time series are not independent draws: over 8 s the pulse trains' joint
# occupancy is not exactly the product of their own, so the critic keeps finding a little
# dependence and the game takes longer to settle than on i.i.d. rows (measured: 460 to 580
# updates for seeds 0 to 2, against the default max_iter=300).
models = {
    "FastICA": FastICA(n_components=3, whiten="unit-variance", random_state=0),
    "ICA": ICA(max_iter=30 if QUICK else 600, random_state=0),
}
recovered = {name: model.fit_transform(X) for name, model in models.items()}


def amari_error(unmixing):
    """Amari error x 100 of ``unmixing @ mixing``: 0 when each component is one source."""
    P = np.abs(unmixing @ mixing)
    m = len(P)
    rows = (P.sum(axis=1) / P.max(axis=1) - 1).sum()
    cols = (P.sum(axis=0) / P.max(axis=0) - 1).sum()
    return 100 * (rows + cols) / (2 * m * (m - 1))


def matched(components):
    """The components reordered and signed to follow the sources, for the plot."""
    correlation = np.corrcoef(sources.T, components.T)[:3, 3:]
    order = np.abs(correlation).argmax(axis=1)
    return components[:, order] * np.sign(correlation[np.arange(3), order])


# %%
# How well each method un-mixes
# -----------------------------
# The Amari error of the un-mixing (0 when each component is one source, up to scale and
# order), the worst correlation of a source with its component, and the dependence left
# between the components, by gradient-boosted trees predicting each one and its square from
# the others on held-out rows (about 0 for independent components).

trees = DependenceScorer("hgb", random_state=0)
for name, model in models.items():
    worst = np.abs(np.corrcoef(sources.T, recovered[name].T)[:3, 3:]).max(axis=1).min()
    print(
        f"{name:8} Amari error {amari_error(model.components_):5.1f}   worst source "
        f"correlation {worst:.3f}   dependence (trees) {trees.score(recovered[name]):.3f}"
    )

# %%
# The signals
# -----------
# The first 800 samples of the sources, the sensors, and each method's components, matched
# to the sources. FastICA's components mix the two pulse trains.

rows = {"sources": sources, "sensors": X} | {n: matched(c) for n, c in recovered.items()}
fig, axes = plt.subplots(len(rows), 1, figsize=(8, 8), sharex=True)
for ax, (name, values) in zip(axes, rows.items(), strict=True):
    ax.plot(t[:800], values[:800] + [0, 5, 10], linewidth=0.8)
    ax.set_yticks([])
    ax.set_ylabel(name)
axes[-1].set_xlabel("time")
fig.tight_layout()
plt.show()
