"""
A chain or a collider? Conditional independence tests
=====================================================

Causal discovery (the PC and FCI algorithms) reads a graph off conditional independences.
Three variables tell two structures apart that plain correlations cannot:

- a **chain** ``X -> Z -> Y``: X and Y are dependent, but independent **given Z** (Z carries
  all that passes from one to the other);
- a **collider** ``X -> Z <- Y``: X and Y are independent, but dependent **given Z**
  (knowing the common effect links its causes).

:meth:`DependenceScorer.test(X, Y, Z=Z) <sklearn_adm.DependenceScorer.test>` tests X against
Y given Z: it predicts X and Y from Z with a kernel ridge regression (each row from one fitted
on the other half of the rows), and tests what is left, shuffling Y's rows only among rows
of nearly equal Z. Here the relations are nonlinear, as a partial correlation (linear
regressions on Z) would need them not to be.
"""

import matplotlib.pyplot as plt
import numpy as np

from sklearn_adm import DependenceScorer

rng = np.random.default_rng(1)
n = 800


def noise():
    return 0.3 * rng.normal(size=n)


# a chain: X -> Z -> Y
x = rng.uniform(-1, 1, size=n)
z = np.sin(3 * x) + noise()
y = np.cos(2 * z) + noise()
chain = x, y, z

# a collider: X -> Z <- Y
x2, y2 = rng.uniform(-1, 1, size=(2, n))
z2 = np.tanh(2 * x2) + y2**3 + noise()
collider = x2, y2, z2

# %%
# Four tests per structure
# ------------------------
# ``"dcor"`` (distance correlation) is fast at this size; ``"adm"`` trains a critic and
# suits larger samples (its cost is linear in the rows).

scorer = DependenceScorer("dcor", random_state=0)
structures = {"chain X -> Z -> Y": chain, "collider X -> Z <- Y": collider}
p_values = {}
for name, (a, b, c) in structures.items():
    a, b, c = a[:, None], b[:, None], c[:, None]
    p_values[name] = scorer.test(a, b).pvalue, scorer.test(a, b, Z=c).pvalue
    print(f"{name:<22} X vs Y: p = {p_values[name][0]:.3f}   given Z: p = {p_values[name][1]:.3f}")

# %%
# The chain's dependence vanishes given Z; the collider's appears. A PC algorithm that
# reads these four p-values at 0.05 orients the collider's edges into Z and leaves the
# chain's unoriented. (Each test rejects independent data at 0.05 in one draw of twenty:
# that is its level, and another seed can show it.)

fig, axes = plt.subplots(1, 2, figsize=(8, 3.2), sharey=True)
for ax, (name, (a, b, c)) in zip(axes, structures.items(), strict=True):
    ax.scatter(a, b, c=c, s=6, cmap="viridis")
    marginal, conditional = p_values[name]
    ax.set_title(f"{name}\np = {marginal:.3f}, given Z p = {conditional:.3f}", fontsize=9)
    ax.set_xlabel("X")
axes[0].set_ylabel("Y (colour: Z)")
fig.tight_layout()
plt.show()
