"""NonlinearPICA: the ADM game on an MLP autoencoder (NLPICA, paper App. B.2)."""

import numpy as np
import torch
from scipy.special import erf
from sklearn.utils._param_validation import StrOptions
from torch import nn

from ._base import BaseADMTransformer

_ACTIVATIONS = {
    "tanh": (torch.tanh, np.tanh),
    "relu": (torch.relu, lambda x: np.maximum(x, 0.0)),
    "gelu": (nn.functional.gelu, lambda x: 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))),
}


class _BatchedMLP(nn.Module):
    """``n_init`` MLPs of the same shape run side by side; input ``(n, n_init, in)``."""

    def __init__(self, n_init, sizes, activation):
        super().__init__()
        self.activation = _ACTIVATIONS[activation][0]
        self.weights = nn.ParameterList()
        self.biases = nn.ParameterList()
        for fan_in, fan_out in zip(sizes[:-1], sizes[1:], strict=True):
            bound = fan_in**-0.5
            self.weights.append(
                nn.Parameter(torch.empty(n_init, fan_in, fan_out).uniform_(-bound, bound))
            )
            self.biases.append(nn.Parameter(torch.empty(n_init, fan_out).uniform_(-bound, bound)))

    def forward(self, h):
        last = len(self.weights) - 1
        for i, (weight, bias) in enumerate(zip(self.weights, self.biases, strict=True)):
            h = torch.einsum("nri,rio->nro", h, weight) + bias
            if i < last:
                h = self.activation(h)
        return h


class _MLPAutoencoders(nn.Module):
    def __init__(self, n_init, n_features, n_components, hidden, activation):
        super().__init__()
        self.n_init = n_init
        self.encoder = _BatchedMLP(n_init, (n_features, *hidden, n_components), activation)
        self.decoder = _BatchedMLP(n_init, (n_components, *hidden[::-1], n_features), activation)

    def encode(self, x):
        return self.encoder(x.unsqueeze(1).expand(-1, self.n_init, -1)).flatten(start_dim=1)

    def reconstruction_error(self, x, z):
        x_hat = self.decoder(z.view(len(z), self.n_init, -1))
        return (x.unsqueeze(1) - x_hat).square().mean(dim=(0, 2))


def _numpy_mlp(h, weights, biases, activation):
    function = _ACTIVATIONS[activation][1]
    for i, (weight, bias) in enumerate(zip(weights, biases, strict=True)):
        h = h @ weight + bias
        if i < len(weights) - 1:
            h = function(h)
    return h


class NonlinearPICA(BaseADMTransformer):
    r"""Nonlinear Principal and Independent Component Analysis (NLPICA).

    An MLP autoencoder whose bottleneck is trained to be mutually independent by the same ADM
    game as :class:`PICA` (paper, App. B.2): reconstruction error plus
    ``dependence_weight * (1 - mean critic MSE)`` plus a hinge that keeps each component's
    variance above 1. Factors mixed nonlinearly can come out as independent components, which
    a plain autoencoder's bottleneck does not promise. The solution is not unique: any
    invertible function of one component is as independent.

    Parameters
    ----------
    n_components : int or None, default=None
        Width of the bottleneck. None keeps ``n_features``.
    hidden_layer_sizes : tuple of int, default=(64, 64)
        Hidden widths of the encoder; the decoder mirrors them.
    activation : {"tanh", "relu", "gelu"}, default="tanh"
        Activation of the hidden layers.
    dependence_weight : float, default=1.0
        Weight of the dependence term; 0 gives a plain autoencoder.
    reconstruction_weight : float, default=1.0
        Weight of the reconstruction error, measured on data standardised per feature (the
        fraction of variance unexplained).
    variance_weight : float, default=2.0
        Weight of the hinge on each component's variance (the paper's default).
    critic_steps, critic_hidden, probe_hidden, probes, max_iter, batch_size, learning_rate, \
critic_learning_rate, tol, n_iter_no_change, validation_fraction, n_init, device, \
random_state, verbose
        As for :class:`PICA`, except ``max_iter=2000``, ``learning_rate=2e-3`` (plain Adam
        on the MLP weights) and ``tol=3e-4``.

    Attributes
    ----------
    mean_, scale_ : ndarray of shape (n_features,)
        Per-feature standardisation applied before the encoder.
    encoder_weights_, encoder_biases_, decoder_weights_, decoder_biases_ : list of ndarray
        The trained layers of the kept start, as numpy arrays: a fitted model pickles and
        transforms anywhere, with or without torch's devices.
    n_components_, n_features_in_, feature_names_in_, n_iter_, history_, device_
        As for :class:`PICA`.

    See Also
    --------
    PICA : The linear version, with tied weights.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_adm import NonlinearPICA
    >>> rng = np.random.default_rng(0)
    >>> s = rng.uniform(-1, 1, size=(500, 2))
    >>> X = np.c_[s[:, 0] + s[:, 1], np.tanh(2 * s[:, 0]) * s[:, 1], np.sin(2 * s[:, 1])]
    >>> # a quick, rough fit: stop once the components move by less than 5 % over 20 updates
    >>> model = NonlinearPICA(2, n_iter_no_change=20, tol=0.05, random_state=0).fit(X)
    >>> model.transform(X).shape
    (500, 2)
    """

    _parameter_constraints: dict = {
        **BaseADMTransformer._parameter_constraints,
        "hidden_layer_sizes": [tuple],
        "activation": [StrOptions(set(_ACTIVATIONS))],
    }
    _per_feature_scaling = True

    def __init__(
        self,
        n_components=None,
        *,
        hidden_layer_sizes=(64, 64),
        activation="tanh",
        dependence_weight=1.0,
        reconstruction_weight=1.0,
        variance_weight=2.0,
        critic_steps=4,
        critic_hidden=32,
        probe_hidden=16,
        probes=True,
        max_iter=2000,
        batch_size=512,
        learning_rate=2e-3,
        critic_learning_rate=2e-2,
        tol=3e-4,
        n_iter_no_change=120,
        validation_fraction=0.1,
        n_init=4,
        device="auto",
        random_state=None,
        verbose=0,
    ):
        self.n_components = n_components
        self.hidden_layer_sizes = hidden_layer_sizes
        self.activation = activation
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
        hidden = tuple(int(width) for width in self.hidden_layer_sizes)
        if any(width < 1 for width in hidden):
            raise ValueError(f"hidden_layer_sizes must be positive, got {self.hidden_layer_sizes}.")
        return _MLPAutoencoders(self.n_init, n_features, n_components, hidden, self.activation)

    def _store_fitted(self, autoencoder, init, X, mean, scale):
        def layers(mlp):
            weights = [w[init].detach().numpy().astype(X.dtype) for w in mlp.weights]
            biases = [b[init].detach().numpy().astype(X.dtype) for b in mlp.biases]
            return weights, biases

        self.encoder_weights_, self.encoder_biases_ = layers(autoencoder.encoder)
        self.decoder_weights_, self.decoder_biases_ = layers(autoencoder.decoder)
        self.mean_ = mean.astype(X.dtype)
        self.scale_ = np.broadcast_to(scale, mean.shape).astype(X.dtype)

    def _transform(self, X):
        scaled = (X - self.mean_) / self.scale_
        return _numpy_mlp(scaled, self.encoder_weights_, self.encoder_biases_, self.activation)

    def _inverse_transform(self, Z):
        scaled = _numpy_mlp(Z, self.decoder_weights_, self.decoder_biases_, self.activation)
        return scaled * self.scale_ + self.mean_
