"""PICA: Principal and Independent Component Analysis (paper, Sec. 5.1 and App. B)."""

import numpy as np
import torch
from torch import nn

from ._base import BaseADMTransformer


class _TiedLinearAutoencoders(nn.Module):
    """``n_init`` linear autoencoders, encoder ``z = x W`` and decoder ``x_hat = z W^T`` (Eq. 6).

    ``weight`` has shape ``(n_init, n_features, n_components)``. Its columns have about unit
    norm, so their entries shrink as ``1/sqrt(n_features)``; the trained parameter is
    ``sqrt(n_features) * W``, whose entries stay of order 1, so that one Adam step size fits
    any number of features.
    """

    def __init__(self, weight):
        super().__init__()
        self.n_init = weight.shape[0]
        self._unit = weight.shape[1] ** -0.5
        self.coordinates = nn.Parameter(weight / self._unit)

    @property
    def weight(self):
        return self.coordinates * self._unit

    def encode(self, x):
        return torch.einsum("nl,rld->nrd", x, self.weight).flatten(start_dim=1)

    def selection_penalty(self, z):
        """Zero: the held-out objective alone ranks linear starts."""
        return torch.zeros(self.coordinates.shape[0], device=z.device)

    def reconstruction_error(self, x, z):
        codes = z.view(z.shape[0], self.n_init, -1)
        x_hat = torch.einsum("nrd,rld->nrl", codes, self.weight)
        return (x.unsqueeze(1) - x_hat).square().mean(dim=(0, 2))


class PICA(BaseADMTransformer):
    r"""Principal and Independent Component Analysis.

    A linear autoencoder with tied weights (the decoder is the encoder transposed) trained to
    reconstruct the data while an ADM critic tries to predict each component from the others
    (paper, Eq. 6). Where PCA only makes its components uncorrelated, PICA makes them
    independent: it finds the directions of most variance whose projections are mutually
    independent. With ``dependence_weight=0`` it is PCA, found by gradient descent.

    Parameters
    ----------
    n_components : int or None, default=None
        Number of components. None keeps ``n_features``.
    dependence_weight : float, default=1.0
        Weight :math:`\lambda` of the dependence term ``1 - mean critic MSE``. 0 turns ADM off.
    reconstruction_weight : float, default=1.0
        Weight of the reconstruction error. The error is measured on data centred and scaled
        to unit mean variance, i.e. as the fraction of variance left unexplained, so neither
        weight depends on the units of ``X``.
    variance_weight : float, default=0.0
        Weight of the hinge keeping each component's variance above 1 (in the scaled units).
        The tied decoder already ties the scale of the components to the reconstruction, so
        PICA does not need it.
    critic_steps : int, default=4
        Critic updates per encoder update (``k`` in Algorithm 1).
    critic_hidden : int or tuple of int, default=32
        Hidden widths of the dependency predictors.
    probe_hidden : int or tuple of int, default=16
        Hidden widths of the probe networks.
    probes : bool, default=True
        If False, the critic only predicts the components themselves (predictability
        minimisation), which detects dependence of the conditional mean only.
    max_iter : int, default=1000
        Maximum number of encoder updates.
    batch_size : int or None, default=512
        Rows per minibatch; None (or a size above the number of training rows) uses them all.
    learning_rate : float, default=0.02
        Adam step size of the encoder, on the directions' coordinates scaled by
        ``sqrt(n_features)`` (each coordinate then moves by about
        ``learning_rate / sqrt(n_features)`` per update, whatever the number of features).
    critic_learning_rate : float, default=0.02
        Adam step size of the critic.
    tol : float, default=1e-3
        Convergence threshold: training stops when the representation of the held-out rows
        (by the averaged encoder of the leading start) has changed by less than ``tol``,
        relative to its variance, over the last ``n_iter_no_change`` encoder updates.
    n_iter_no_change : int, default=120
        Length, in encoder updates, of the window over which that change is measured. It is
        checked every 10 updates.
    validation_fraction : float, default=0.1
        Fraction of rows held out from training. The critic is trained on the other rows; the
        held-out rows give its honest estimate of dependence (reported in ``history_``), the
        choice among starts, and the calibration that keeps a critic which memorised its rows
        from driving the encoder. With fewer than 10 held-out rows, all rows serve both roles.
    n_init : int, default=4
        Number of random starts, trained side by side in one batched game (on a CPU about 1.5
        times the cost of one); the start with the lowest held-out objective at the end is
        kept. The game is not convex: a single start can stall near a saddle.
    device : {"auto", "cpu", "cuda", "cuda:N", "mps"}, default="auto"
        Where to train: "auto" uses CUDA when available. Training runs in float32; the fitted
        components are numpy arrays, so ``transform`` runs anywhere.
    random_state : int, RandomState instance or None, default=None
        Seeds the initial weights, the held-out split and the minibatches. An int gives the
        same result on the CPU every time.
    verbose : int, default=0
        With 1 or more, a progress bar shows the held-out reconstruction and critic MSE.

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        The encoder's directions, ordered by decreasing explained variance, each with its
        largest entry positive. Rows have about unit norm but are not exactly orthonormal:
        they are the trained tied weights.
    mean_ : ndarray of shape (n_features,)
        Per-feature mean of the training data.
    explained_variance_ : ndarray of shape (n_components,)
        Variance of each component on the training data.
    explained_variance_ratio_ : ndarray of shape (n_components,)
        ``explained_variance_`` divided by the total variance of the training data.
    n_components_ : int
        Number of components.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of features seen during fit, when ``X`` has string column names.
    n_iter_ : int
        Number of encoder updates run.
    history_ : list of dict
        One entry per encoder update, for the start that was kept: ``objective``,
        ``reconstruction`` (fraction of variance unexplained), ``critic_mse`` and
        ``variance_penalty`` on the training minibatch; every 10 updates also the same four
        on the held-out rows (``val_objective``, ...; ``val_critic_mse`` is the honest
        estimate, 1 for independent components) and ``val_change``, the quantity ``tol``
        is compared with.
    device_ : torch.device
        The device training ran on.

    See Also
    --------
    sklearn.decomposition.PCA : Uncorrelated components of maximal variance.
    sklearn.decomposition.FastICA : Independent components, without a variance criterion.
    NonlinearPICA : The same game with an MLP autoencoder.

    Notes
    -----
    ``transform(X)`` returns ``(X - mean_) @ components_.T`` and ``inverse_transform(Z)``
    returns ``Z @ components_ + mean_``, exactly as :class:`~sklearn.decomposition.PCA` does
    without whitening. Internally the game runs on data centred and divided by one number (the
    root mean variance), which changes neither the directions nor their order.

    References
    ----------
    .. [1] Adversarial Dependence Minimization, Sec. 5.1 "Principal and Independent Component
       Analysis" and App. B; Algorithm 1 in App. E.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_adm import PICA
    >>> rng = np.random.default_rng(0)
    >>> v = rng.uniform(-np.sqrt(3), np.sqrt(3), size=(5000, 2))
    >>> X = np.c_[5 * v[:, 0], 3 * np.cos(2 * np.pi * v[:, 0] / np.sqrt(3)), v[:, 1]]
    >>> pica = PICA(n_components=2, random_state=0).fit(X)
    >>> np.abs(pica.components_).round(1)
    array([[1., 0., 0.],
           [0., 0., 1.]])
    """

    def __init__(
        self,
        n_components=None,
        *,
        dependence_weight=1.0,
        reconstruction_weight=1.0,
        variance_weight=0.0,
        critic_steps=4,
        critic_hidden=32,
        probe_hidden=16,
        probes=True,
        max_iter=1000,
        batch_size=512,
        learning_rate=2e-2,
        critic_learning_rate=2e-2,
        tol=1e-3,
        n_iter_no_change=120,
        validation_fraction=0.1,
        n_init=4,
        device="auto",
        random_state=None,
        verbose=0,
    ):
        self.n_components = n_components
        self.dependence_weight = dependence_weight
        self.reconstruction_weight = reconstruction_weight
        self.variance_weight = variance_weight
        self.critic_steps = critic_steps
        self.critic_hidden = critic_hidden
        self.probe_hidden = probe_hidden
        self.probes = probes
        self.max_iter = max_iter
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.critic_learning_rate = critic_learning_rate
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.validation_fraction = validation_fraction
        self.n_init = n_init
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    def _make_autoencoder(self, n_features, n_components, X_train):
        # Random orthonormal starts: generic points, away from the saddle at PCA's solution.
        weight, _ = torch.linalg.qr(torch.randn(self.n_init, n_features, n_components))
        return _TiedLinearAutoencoders(weight)

    def _store_fitted(self, autoencoder, init, X, mean, scale):
        components = autoencoder.weight[init].detach().numpy().astype(np.float64).T
        self.mean_ = X.mean(axis=0, dtype=np.float64)
        scores = (X - self.mean_) @ components.T
        variance = scores.var(axis=0, ddof=1)
        order = np.argsort(-variance, kind="stable")
        components, variance = components[order], variance[order]
        # Deterministic signs, as sklearn's svd_flip: the largest entry of each row is positive.
        largest = np.argmax(np.abs(components), axis=1)
        components *= np.sign(components[np.arange(len(components)), largest])[:, None]
        total_variance = X.var(axis=0, ddof=1).sum()
        dtype = X.dtype
        self.components_ = components.astype(dtype)
        self.mean_ = self.mean_.astype(dtype)
        self.explained_variance_ = variance.astype(dtype)
        self.explained_variance_ratio_ = (
            variance / total_variance if total_variance > 0 else variance * 0
        ).astype(dtype)

    def _transform(self, X):
        return (X - self.mean_) @ self.components_.T

    def _inverse_transform(self, Z):
        return Z @ self.components_ + self.mean_
