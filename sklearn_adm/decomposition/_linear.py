"""What PICA and ICA share: a linear map of the centred data, its inverse, and the signs."""

import numpy as np
from sklearn.base import _fit_context

from .._data.chunked import check_chunked, is_chunked
from ._base import BaseADMTransformer


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

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y=None):
        """Go on with the game on one more batch of rows, for data that arrive as a stream.

        The first call opens the game on its batch, which fixes what a fit takes from all
        rows: the held-out rows (a share ``validation_fraction`` of this batch), the scaling,
        the number of components, the start (built from this batch as ``fit`` builds it) and
        the step's schedule. Each call then plays one pass of minibatches over its batch
        (``ceil(n_rows / batch_size)`` updates, each after ``critic_steps`` critic
        updates) and refits the attributes from the averaged encoder, with ``mean_`` and the
        variances over every row seen so far. No stopping rule ends a stream: watch the
        held-out estimate in ``history_`` and stop sending batches. ``fit`` starts afresh.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            A batch of rows (at least 2), with the features of the first batch. A
            memory-mapped or Dask array is taken a block of rows at a time (a Dask array's
            row chunks; 64 MB of a memory map), each block a batch of its own, so that it is
            never held whole.
        y : Ignored
            Not used, present for API consistency by convention.

        Returns
        -------
        self : object
            The estimator, fitted on the batches so far.
        """
        if not is_chunked(X):
            return self._partial_fit(X)
        first = getattr(self, "_stream", None) is None
        for block in check_chunked(self, X, reset=first).blocks():
            self._partial_fit(block)
        return self

    def _transform(self, X):
        if self._centres_data:
            X = X - self.mean_
        return X @ self.components_.T

    def _inverse_transform(self, Z):
        X = Z @ self.mixing_.T
        return X + self.mean_ if self._centres_data else X
