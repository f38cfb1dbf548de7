"""
Learning a causal graph with PC: a linear test and sklearn-adm's
=================================================================

The PC algorithm learns a causal graph (up to the directions the data cannot tell) from
conditional independences: it removes the edge between two variables as soon as a test finds
them independent given some set of their neighbours, then orients the colliders. Its answer is
only as good as its test. Here six variables are drawn from a graph whose relations are
nonlinear (sines, squares, an absolute value), and causal-learn's ``pc`` runs twice on them:
with Fisher's z test of partial correlations, and with sklearn-adm's conditional distance test
(``"adm_dcor"``, which :class:`~sklearn_adm.causal.CausalLearnTest` registers when imported).

The distance test runs on :class:`~sklearn_adm.causal.ConditionalIndependence`: the work on a
conditioning set is shared by every pair PC tests given it.
"""

import os

import matplotlib.pyplot as plt
import numpy as np
from causallearn.search.ConstraintBased.PC import pc

from sklearn_adm.causal import CausalLearnTest  # noqa: F401 (registers "adm_dcor")

rng = np.random.default_rng(0)
n = 2000 if os.environ.get("SKLEARN_ADM_EXAMPLES_QUICK") else 3000
names = ["A", "B", "C", "D", "E", "F"]
true_edges = [("A", "B"), ("A", "C"), ("B", "D"), ("C", "D"), ("D", "E")]


def noise():
    return 0.4 * rng.normal(size=n)


a = rng.normal(size=n)
b = np.sin(2 * a) + noise()
c = a**2 + noise()
d = np.tanh(2 * b) + np.abs(c - 1) + noise()
e = np.cos(2 * d) + noise()
f = rng.normal(size=n)  # no cause, no effect
data = np.c_[a, b, c, d, e, f]

# %%
# PC with each test
# -----------------
# ``pc`` names the variables X1, X2, ...; ``graph.graph[i, j] == 1`` with
# ``graph.graph[j, i] == -1`` is an arrow from j to i, -1 both ways an undirected edge.

found = {test: pc(data, 0.01, test, show_progress=False).G for test in ("fisherz", "adm_dcor")}
print("edges each test let PC find:")
for test, graph in found.items():
    print(f"  {test}: {[str(edge) for edge in graph.get_graph_edges()]}")

# %%
# The graphs
# ----------
# The true graph, and what each test let PC find. A linear test misses the square and the
# absolute value (their correlation is near 0): PC loses those edges, keeps edges that a
# partial correlation could not explain away, and orients what is left wrongly. With the
# distance test PC finds every edge and no other. One arrow points the wrong way: E's
# dependence on C, through the absolute value and then a cosine of D, is too faint at this
# size for the test to see, so PC takes C and E for independent without D and reads
# C -> D <- E as a collider.

angles = np.pi / 2 - 2 * np.pi * np.arange(len(names)) / len(names)
where = np.c_[np.cos(angles), np.sin(angles)]


def draw(ax, edges, title):
    """``edges``: (tail, head, directed) triples of variable positions."""
    for i, j, directed in edges:
        ax.annotate(
            "",
            xy=where[j],
            xytext=where[i],
            arrowprops={
                "arrowstyle": "-|>" if directed else "-",
                "shrinkA": 14,
                "shrinkB": 14,
                "lw": 1.5,
            },
        )
    for k, name in enumerate(names):
        ax.scatter(*where[k], s=600, color="white", edgecolor="black", zorder=3)
        ax.text(*where[k], name, ha="center", va="center", zorder=4)
    ax.set_title(title)
    ax.set_xlim(-1.4, 1.4)
    ax.set_ylim(-1.4, 1.4)
    ax.set_aspect("equal")
    ax.axis("off")


def edges_of(graph):
    matrix = graph.graph
    edges = []
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            if matrix[i, j] == -1 and matrix[j, i] == 1:
                edges.append((i, j, True))
            elif matrix[j, i] == -1 and matrix[i, j] == 1:
                edges.append((j, i, True))
            elif matrix[i, j] != 0:
                edges.append((i, j, False))
    return edges


fig, axes = plt.subplots(1, 3, figsize=(11, 4))
truth = [(names.index(s), names.index(t), True) for s, t in true_edges]
draw(axes[0], truth, "true graph")
draw(axes[1], edges_of(found["fisherz"]), "PC with Fisher's z")
draw(axes[2], edges_of(found["adm_dcor"]), "PC with sklearn-adm's test")
fig.tight_layout()
plt.show()
