"""``python -m sklearn_adm demo``: the paper's PCA-vs-PICA example, side by side."""

import time

# Imported before the timed fits, as the peers' modules are below: PICA's first fit in a
# process would otherwise count torch's import as fit time.
import torch  # noqa: F401

# isort: split
import numpy as np
from sklearn.decomposition import PCA, FastICA

from ..datasets import make_pca_vs_pica
from ..decomposition._pica import PICA
from ..independence._distance import distance_correlation_one_vs_rest


def _reconstruction_error(model, X):
    """Mean over rows of the squared reconstruction error, summed over features."""
    return float(np.mean(np.sum((X - model.inverse_transform(model.transform(X))) ** 2, axis=1)))


def _directions(model):
    """Unit-norm directions in input space onto which the method projects."""
    W = model.components_
    return W / np.linalg.norm(W, axis=1, keepdims=True)


def compare(n_samples=10_000, n_test=20_000, random_state=0, verbose=0):
    """Fit PCA, FastICA and PICA on the example; score them on fresh samples.

    Returns a list of dicts (one per method) and the fresh samples with their factors.
    """
    X, _ = make_pca_vs_pica(n_samples, random_state=random_state)
    X_test, factors = make_pca_vs_pica(n_test, random_state=random_state + 1)
    models = {
        "PCA": PCA(n_components=2),
        "FastICA": FastICA(n_components=2, whiten="unit-variance", random_state=random_state),
        "PICA": PICA(n_components=2, random_state=random_state, verbose=verbose),
    }
    rows = []
    for name, model in models.items():
        start = time.perf_counter()
        model.fit(X)
        seconds = time.perf_counter() - start
        Z = model.transform(X_test)
        rows.append(
            {
                "method": name,
                "directions": _directions(model),
                "dcor": float(distance_correlation_one_vs_rest(Z)[0]),  # dCor(z1, z2)
                "reconstruction": _reconstruction_error(model, X_test),
                "seconds": seconds,
                "Z": Z,
            }
        )
    return rows, X_test, factors


def format_table(rows):
    lines = [
        f"{'method':<8} {'|direction 1|':<20} {'|direction 2|':<20} "
        f"{'dCor(z1,z2)':>11} {'recon. MSE':>10} {'fit (s)':>8}"
    ]
    for row in rows:
        d1, d2 = (
            np.array2string(np.abs(d), precision=2, suppress_small=True) for d in row["directions"]
        )
        lines.append(
            f"{row['method']:<8} {d1:<20} {d2:<20} {row['dcor']:>11.3f} "
            f"{row['reconstruction']:>10.2f} {row['seconds']:>8.2f}"
        )
    return "\n".join(lines)


def plot(rows, factors, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(rows), 2, figsize=(9, 3.2 * len(rows)), squeeze=False)
    for row, (left, right) in zip(rows, axes, strict=True):
        for ax, factor, label in ((left, factors[:, 0], "$v_1$"), (right, factors[:, 1], "$v_2$")):
            points = ax.scatter(row["Z"][:, 0], row["Z"][:, 1], c=factor, s=2, cmap="viridis")
            ax.set_title(f"{row['method']}: coloured by {label} (dCor {row['dcor']:.3f})")
            ax.set_xlabel("$z_1$")
            ax.set_ylabel("$z_2$")
            fig.colorbar(points, ax=ax)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def run(n_samples=10_000, random_state=0, output="pica_demo.png", verbose=0):
    print(
        "Example 1 of the paper: x = [5 v1, 3 cos(2 pi v1 / sqrt 3), v2], v1, v2 independent.\n"
        "PCA keeps x1 and x2 (both functions of v1); PICA should keep x1 and x3 (one per factor).\n"
        f"Fitting on {n_samples} rows; scores on 20000 fresh rows.\n"
    )
    rows, _, factors = compare(n_samples, random_state=random_state, verbose=verbose)
    print(format_table(rows))
    print(
        "\ndCor: distance correlation between the two components (0 iff independent; about "
        "0.01 for independent data at this size).\nrecon. MSE: squared error per row; x3 "
        "alone has variance 1, x2 alone 4.5."
    )
    try:
        plot(rows, factors, output)
    except ImportError:
        print("\nmatplotlib is not installed: no figure (pip install matplotlib).")
    else:
        print(f"\nFigure of the latent spaces: {output}")
