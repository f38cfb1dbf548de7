"""PCA, a plain autoencoder and NonlinearPICA on nonlinearly mixed factors.

Two independent uniform factors are mixed into five features
(:func:`sklearn_adm.datasets.make_nonlinear_mixture`). Each method keeps two components; the
script prints, on fresh rows, the reconstruction R^2 and the distance correlation between the
two components, and saves a figure of each latent space coloured by each factor
(``nonlinear_pica.png``).

Run: python examples/nonlinear_pica.py  (about a minute on a 2-core CPU)
"""

import dcor
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from sklearn.decomposition import PCA  # noqa: E402

from sklearn_adm import NonlinearPICA  # noqa: E402
from sklearn_adm.datasets import make_nonlinear_mixture  # noqa: E402


def main(output="nonlinear_pica.png"):
    X, _ = make_nonlinear_mixture(5_000, random_state=0)
    X_test, factors = make_nonlinear_mixture(10_000, random_state=1)
    models = {
        "PCA": PCA(n_components=2),
        "plain autoencoder": NonlinearPICA(n_components=2, dependence_weight=0, random_state=0),
        "NonlinearPICA": NonlinearPICA(n_components=2, random_state=0),
    }
    fig, axes = plt.subplots(len(models), 2, figsize=(9, 3.2 * len(models)))
    print(f"{'method':<18} {'R^2':>6} {'dCor(z1, z2)':>13}")
    for (name, model), row in zip(models.items(), axes, strict=True):
        Z = model.fit(X).transform(X_test)
        residual = ((X_test - model.inverse_transform(Z)) ** 2).sum()
        r2 = 1 - residual / ((X_test - X_test.mean(axis=0)) ** 2).sum()
        between = dcor.distance_correlation(Z[:, 0], Z[:, 1], method="avl")
        print(f"{name:<18} {r2:>6.3f} {between:>13.3f}")
        for ax, j in zip(row, range(2), strict=True):
            points = ax.scatter(Z[:, 0], Z[:, 1], c=factors[:, j], s=2, cmap="viridis")
            ax.set_title(f"{name}: coloured by $s_{j + 1}$ (dCor {between:.3f})")
            fig.colorbar(points, ax=ax)
    fig.tight_layout()
    fig.savefig(output, dpi=100)
    print(f"Figure: {output}")


if __name__ == "__main__":
    main()
