"""PICA on real data: the 8x8 digit images shipped with scikit-learn.

PCA's components of image data are uncorrelated but far from independent. This script fits
PCA and PICA with 8 components on 70 % of the digits and reports, on the other 30 %:

- the fraction of variance left unexplained by the reconstruction (lower is better);
- the mean distance correlation of each component with all the others (the paper's metric;
  lower is more independent).

Run: python examples/pica_on_digits.py  (about a minute on a 2-core CPU)
"""

import time

import dcor
import numpy as np
from sklearn.datasets import load_digits
from sklearn.decomposition import PCA
from sklearn.model_selection import train_test_split

from sklearn_adm import PICA


def one_vs_rest_dcor(Z):
    return np.mean(
        [dcor.distance_correlation(Z[:, j], np.delete(Z, j, axis=1)) for j in range(Z.shape[1])]
    )


def unexplained_variance(model, X):
    residual = X - model.inverse_transform(model.transform(X))
    return (residual**2).sum() / ((X - X.mean(axis=0)) ** 2).sum()


def main():
    X_train, X_test = train_test_split(load_digits().data, test_size=0.3, random_state=0)
    print(f"{'method':<6} {'fit (s)':>8} {'unexplained variance':>21} {'dCor one-vs-rest':>17}")
    for model in (PCA(n_components=8), PICA(n_components=8, random_state=0, verbose=1)):
        start = time.perf_counter()
        model.fit(X_train)
        seconds = time.perf_counter() - start
        Z = model.transform(X_test)
        print(
            f"{type(model).__name__:<6} {seconds:>8.1f}"
            f" {unexplained_variance(model, X_test):>21.3f}"
            f" {one_vs_rest_dcor(Z):>17.3f}"
        )


if __name__ == "__main__":
    main()
