"""What PICA and ICA share: a linear map of the centred data, its inverse, and the signs."""

import numpy as np

from ._base import BaseADMTransformer

#: the linear games' (PICA's and ICA's) critic updates on the starts before the first encoder
#: update
WARMUP_STEPS = 100
#: the linear games' encoder updates after which the step has halved
DECAY_UPDATES = 25
#: evaluations whose mean held-out criterion ranks the starts (one evaluation is noisy)
RANK_WINDOW = 3


def flip_signs(components, mixing):
    """``components`` ``(d, n_features)`` and ``mixing`` ``(n_features, d)`` with each
    component's sign chosen so that its largest coefficient is positive, as scikit-learn's
    ``svd_flip`` makes PCA's: a fit gives the same signs on every platform and run."""
    largest = np.argmax(np.abs(components), axis=1)
    signs = np.sign(components[np.arange(len(components)), largest])
    signs[signs == 0] = 1.0
    return components * signs[:, None], mixing * signs


class LinearADMTransformer(BaseADMTransformer):
    """A fitted linear model: ``transform(X) = (X - mean_) @ components_.T`` and
    ``inverse_transform(Z) = Z @ mixing_.T + mean_``, without ``mean_`` where the estimator
    does not centre the data (``_centres_data``)."""

    #: whether transform subtracts ``mean_`` (ICA with ``whiten=False`` does not)
    _centres_data = True

    def _transform(self, X):
        if self._centres_data:
            X = X - self.mean_
        return X @ self.components_.T

    def _inverse_transform(self, Z):
        X = Z @ self.mixing_.T
        return X + self.mean_ if self._centres_data else X
