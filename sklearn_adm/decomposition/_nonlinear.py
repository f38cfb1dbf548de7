"""NonlinearPICA: the ADM game on an MLP autoencoder (NLPICA, paper App. B.2)."""

import itertools
from collections.abc import Callable
from numbers import Real
from typing import NamedTuple

import numpy as np
import torch
from scipy.special import erf
from sklearn.utils._param_validation import Interval, StrOptions
from torch import nn

from .._numerics.functional import tanh
from ..game._autoencoders import Autoencoders
from ._base import BaseADMTransformer


class _Activation(NamedTuple):
    function: Callable  # on tensors
    slope: Callable  # its derivative, from the pre-activation and the activation
    numpy: Callable  # the same function on arrays, for transform


_ACTIVATIONS = {
    "tanh": _Activation(tanh, lambda pre, out: 1.0 - out.square(), np.tanh),
    "relu": _Activation(
        torch.relu, lambda pre, out: (pre > 0).to(pre.dtype), lambda x: np.maximum(x, 0.0)
    ),
    "gelu": _Activation(
        nn.functional.gelu,
        lambda pre, out: torch.ops.aten.gelu_backward(torch.ones_like(pre), pre),
        lambda x: 0.5 * x * (1.0 + erf(x / np.sqrt(2.0))),
    ),
}


class _BatchedMLP(nn.Module):
    """``n_init`` MLPs of the same shape run side by side; input ``(n_init, n, in)``.

    Start-major layout: every layer is one contiguous batched matrix product with its bias.
    """

    def __init__(self, n_init, sizes, activation):
        super().__init__()
        self.activation_name = activation  # a name pickles; the functions are looked up
        self.weights = nn.ParameterList()
        self.biases = nn.ParameterList()
        for fan_in, fan_out in zip(sizes[:-1], sizes[1:], strict=True):
            bound = fan_in**-0.5
            self.weights.append(
                nn.Parameter(torch.empty(n_init, fan_in, fan_out).uniform_(-bound, bound))
            )
            self.biases.append(nn.Parameter(torch.empty(n_init, fan_out).uniform_(-bound, bound)))

    @property
    def activation(self):
        return _ACTIVATIONS[self.activation_name]

    @torch.no_grad()
    def keep_starts(self, starts):
        for parameters in (self.weights, self.biases):
            for i, parameter in enumerate(parameters):
                parameters[i] = nn.Parameter(parameter[starts].clone())

    def _layers(self, h):
        """Each layer in turn: its weight, pre-activation and output (activated, but for the
        last layer's)."""
        last = len(self.weights) - 1
        for i, (weight, bias) in enumerate(zip(self.weights, self.biases, strict=True)):
            pre = torch.baddbmm(bias.unsqueeze(1), h, weight)
            h = self.activation.function(pre) if i < last else pre
            yield weight, pre, h

    def forward(self, h):
        *_, (_, _, output) = self._layers(h)  # the last layer's
        return output

    def jacobian_gram(self, h):
        """Each start's ``J J^T`` at each row, ``(n_init, n, in, in)``, where ``J`` ``(in,
        out)`` is the derivative of the outputs along each input.

        The derivatives are carried forward through the hidden layers (the chain rule in
        forward mode, all inputs at once) to ``A`` ``(in, hidden)``; the last layer is linear,
        ``J = A W``, so ``J J^T = A (W W^T) A^T`` and ``J`` itself is never formed."""
        n_init, n, n_inputs = h.shape
        *hidden, last = self.weights
        rows = None
        for weight, pre, out in itertools.islice(self._layers(h), len(hidden)):
            if rows is None:  # the first layer's Jacobian is its weight, at every row
                rows = weight.unsqueeze(1).expand(n_init, n, *weight.shape[1:])
            else:
                rows = torch.bmm(rows.flatten(1, 2), weight).view(n_init, n, n_inputs, -1)
            rows = rows * self.activation.slope(pre, out).unsqueeze(2)
        outer = last @ last.mT  # (n_init, hidden, hidden)
        if rows is None:  # no hidden layer: J = W at every row
            return outer.unsqueeze(1).expand(n_init, n, n_inputs, n_inputs)
        left = torch.bmm(rows.flatten(1, 2), outer).view(n_init, n, n_inputs, -1)
        return left @ rows.mT


#: rows of the training data whose moments whiten the final encoder
_MOMENT_ROWS = 4096
#: critic updates on the starts before the first encoder update
_WARMUP_STEPS = 200
#: rows x components of the critic's minibatches (a step costs their product)
_CRITIC_BATCH_WORK = 2048
#: two starts of least decoder contrast play on after update 200, one after 400
_NARROWING = ((200, 2), (400, 1))
#: ridge added to the outputs' covariance before it is factored, relative to its mean
#: variance, and the floor of that variance (outputs that do not vary)
_WHITENING_RIDGE, _WHITENING_FLOOR = 1e-6, 1e-6


def _whitening(outputs):
    """The mean ``(n_init, 1, k)`` and whitening ``A`` ``(n_init, k, k)`` of ``outputs``
    ``(n_init, n, k)``: ``(outputs - mean) A`` is centred and decorrelated to unit variance.
    ``A = L^{-T}`` for the Cholesky factor ``L`` of the covariance, in float64 (the outputs
    drift towards collinearity) but on MPS, which has
    none. A factor that fails (outputs not finite) gives codes that are not: the game reports
    the divergence."""
    wide = torch.float32 if outputs.device.type == "mps" else torch.float64
    mean = outputs.mean(dim=1, keepdim=True)
    centred = (outputs - mean).to(wide)
    cov = centred.mT @ centred / outputs.shape[1]
    eye = torch.eye(cov.shape[-1], dtype=wide, device=cov.device)
    level = torch.diagonal(cov, dim1=-2, dim2=-1).mean(dim=-1) + _WHITENING_FLOOR
    factor, _ = torch.linalg.cholesky_ex(cov + _WHITENING_RIDGE * level[:, None, None] * eye)
    whitening = torch.linalg.solve_triangular(factor, eye.expand_as(cov), upper=False).mT
    return mean, whitening.to(outputs.dtype)


class _MLPAutoencoders(Autoencoders):
    """The encoder's outputs are whitened (centred, decorrelated, scaled to unit variance) by
    the moments of the rows encoded, the gradient flowing through them: no two components
    can be copies of each other. Without it, at 32 components on digits, the game let 18 of
    them pair into near copies (correlation 0.99), which the critic predicts perfectly and
    whose gradient then vanishes. :meth:`finish` folds the whitening by the moments of a
    sample of the training rows into the encoder's last layer."""

    def __init__(self, moment_rows, n_init, n_components, hidden, activation):
        super().__init__()
        self.n_init = n_init
        self.n_components = n_components
        self.moment_rows = moment_rows  # training rows, (n, n_features)
        n_features = moment_rows.shape[1]
        self.encoder = _BatchedMLP(n_init, (n_features, *hidden, n_components), activation)
        self.decoder = _BatchedMLP(n_init, (n_components, *hidden[::-1], n_features), activation)
        self.output_variance = None

    def _outputs(self, x):
        return self.encoder(x.expand(self.n_init, -1, -1))

    def encode(self, x):
        outputs = self._outputs(x)
        # for the variance hinge, which reads it once: the outputs' variance before whitening
        self.output_variance = outputs.var(dim=1).flatten()
        mean, whitening = _whitening(outputs)
        return ((outputs - mean) @ whitening).transpose(0, 1).flatten(start_dim=1)

    def variance_hinge(self, z):
        """On the encoder's outputs before the whitening (the codes are white): it keeps
        them from collapsing, where the whitening would divide by vanishing variances."""
        variance, self.output_variance = self.output_variance, None  # keep no graph
        return torch.relu(1.0 - variance)

    @torch.no_grad()
    def finish(self):
        """Fold the whitening by the moments of the sample of training rows into the
        encoder's last layer: its outputs are then the codes."""
        weight, bias = self.encoder.weights[-1], self.encoder.biases[-1]
        mean, whitening = _whitening(self._outputs(self.moment_rows))
        bias.copy_(((bias.unsqueeze(1) - mean) @ whitening).squeeze(1))
        weight.copy_(weight @ whitening)

    def _decode(self, z):
        """Each start's reconstruction, ``(n_init, n, n_features)``."""
        return self.decoder(z.view(len(z), self.n_init, -1).transpose(0, 1))

    def selection_penalty(self, z):
        r"""Each start's decoder contrast, the mean over rows of
        :math:`\sum_i \log \lVert \partial g / \partial z_i \rVert - \tfrac12 \log \det J^\top J`.

        It is zero where the decoder's Jacobian has orthogonal columns and grows as they align
        (the IMA contrast of Gresele et al., 2021); infinite for a start whose decoder ignores
        a direction. Independent components that mix the factors (the Darmois-type solutions
        of paper App. B.2) cut the data along a seam and stretch it, which shears the decoder
        and raises the contrast (design/nonlinear-pica-game).
        """
        n, k = len(z), self.n_components
        gram = self.decoder.jacobian_gram(z.view(n, self.n_init, k).transpose(0, 1))
        # log det by Cholesky; a Gram matrix it cannot factor is singular (contrast infinite)
        factor, info = torch.linalg.cholesky_ex(gram)
        log_det = 2.0 * torch.diagonal(factor, dim1=-2, dim2=-1).log().sum(dim=-1)
        log_det = torch.where(info == 0, log_det, -torch.inf)
        contrast = 0.5 * (torch.diagonal(gram, dim1=-2, dim2=-1).log().sum(dim=-1) - log_det)
        contrast = contrast.mean(dim=1)
        return torch.where(torch.isfinite(contrast), contrast, torch.inf)

    def keep_starts(self, starts):
        self.encoder.keep_starts(starts)
        self.decoder.keep_starts(starts)
        self.n_init = len(starts)

    def reconstruction_error(self, x, z):
        return _SquaredError.apply(self._decode(z), x)


class _SquaredError(torch.autograd.Function):
    """Each start's mean squared error, ``(n_init, n, p), (n, p) -> (n_init,)``, from the
    residual formed once and kept for the backward pass: three passes over the
    reconstruction's size where autograd's difference, square and mean make about eight."""

    @staticmethod
    def forward(ctx, reconstruction, x):
        residual = (reconstruction - x).flatten(start_dim=1)  # (n_init, n * p)
        ctx.save_for_backward(residual)
        ctx.shape = reconstruction.shape
        return torch.linalg.vecdot(residual, residual) / residual.shape[1]

    @staticmethod
    def backward(ctx, grad):
        (residual,) = ctx.saved_tensors
        grad_reconstruction = residual * (2.0 * grad / residual.shape[1]).unsqueeze(1)
        grad_reconstruction = grad_reconstruction.view(ctx.shape)
        grad_x = -grad_reconstruction.sum(dim=0) if ctx.needs_input_grad[1] else None
        return grad_reconstruction, grad_x


def _numpy_mlp(h, weights, biases, activation):
    function = _ACTIVATIONS[activation].numpy
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
    a plain autoencoder's bottleneck does not promise.

    The solution is not unique: any invertible function of one component is as independent,
    and so are some maps that mix the factors (Darmois-type solutions). Of the ``n_init``
    starts, two play on after 200 updates and one after 400, those of lowest *decoder
    contrast* on the held-out rows (a game that stops sooner keeps the start of lowest
    held-out objective plus contrast). The contrast is the mean of
    :math:`\sum_i \log \lVert \partial g / \partial z_i \rVert - \frac12 \log \det
    J_g^\top J_g` (Gresele et al., 2021, "Independent mechanism analysis"), which is
    larger for the sheared decoders that mixing solutions need: a preference among starts,
    not a guarantee of identifiability.

    The components are white on the training rows (centred, uncorrelated, of unit
    variance), as FastICA's with ``whiten="unit-variance"``: in training the encoder's
    outputs are whitened by their own moments, so that no two components can become copies
    of each other, which the game alone did not prevent at many components; the fitted
    encoder holds the whitening in its last layer.

    Parameters
    ----------
    n_components : int or None, default=None
        Width of the bottleneck. None keeps ``n_features``. At most the width of the narrowest
        hidden layer (64 by default): more components would be functions of fewer units, and
        could not be independent.
    hidden_layer_sizes : tuple of int, default=(64, 64)
        Hidden widths of the encoder; the decoder mirrors them.
    activation : {"tanh", "relu", "gelu"}, default="tanh"
        Activation of the hidden layers.
    dependence_weight : float, default=1.0
        Weight of the dependence term; 0 gives a plain autoencoder.
    reconstruction_weight : float, default=1.0
        Weight of the reconstruction error, measured on data standardised per feature (the
        fraction of variance unexplained; see ``scale_``).
    variance_weight : float, default=2.0
        Weight of the hinge on the variance of each of the encoder's outputs before their
        whitening (the paper's default, 2): it keeps them from collapsing, where the
        whitening would divide by vanishing variances.
    tol : float, default=1e-3
        Convergence threshold: training stops when the held-out objective of the leading
        start (reconstruction error plus weighted dependence and variance terms) has not
        fallen by more than ``tol`` over the last ``n_iter_no_change`` encoder updates, as
        scikit-learn's MLPs stop early. The representation itself never settles: any
        invertible function of a component is as good, and the game drifts along them.
    critic_steps : int, default=4
        Critic updates per encoder update (``k`` in Algorithm 1).
    critic_hidden : int or tuple of int, default=32
        Hidden widths of the dependency predictors.
    probe_hidden : int or tuple of int, default=16
        Hidden widths of the probe networks.
    probes : bool, default=True
        If False, the critic only predicts the components themselves (predictability
        minimisation), which detects dependence of the conditional mean only.
    max_iter : int, default=5000
        Maximum number of encoder updates. A few thousand rows converge in 300-1,100; 64
        components on 100,000 rows in about 1.5 minutes on 2 CPU cores.
    batch_size : int or None, default=512
        Rows per minibatch of the autoencoder; None (or a size above the number of training
        rows) uses them all. The critic's minibatches hold ``max(128, 2048 // n_components)``
        rows when that is fewer.
    learning_rate : float, default=5e-3
        Adam's step size for the weights of the encoder and the decoder.
    critic_learning_rate : float, default=2e-2
        Adam's step size for the critic.
    n_iter_no_change : int, default=120
        Encoder updates over which the held-out objective must fall by ``tol``; checked
        every 10 updates.
    validation_fraction : float, default=0.1
        Fraction of rows held out from training, as for :class:`PICA`.
    n_init : int, default=4
        Number of starts, trained side by side in one batched game. After 200 updates the
        two with the lowest decoder contrast play on (at half the cost), exactly as they
        would have with the others, and after 400 the one of them with the lower contrast
        plays on alone.
    device : {"auto", "cpu", "cuda", "cuda:N", "mps"}, default="auto"
        Where to train: "auto" uses CUDA when available.
    random_state : int, RandomState instance or None, default=None
        Seeds the initial weights, the held-out split and the minibatches. An int gives the
        same result to the bit on one machine (its CPU, its libraries) and one number of
        threads (``training_threads`` pins them); another CPU rounds in other places, and a
        long game can carry that into another solution of the same quality (the user guide's
        "Results on other CPUs").
    verbose : int, default=0
        With 1 or more, a progress bar shows the held-out reconstruction and critic MSE.

    Attributes
    ----------
    mean_, scale_ : ndarray of shape (n_features,)
        Per-feature standardisation applied before the encoder: ``scale_`` is the square root
        of each feature's variance plus a tenth of the mean variance, over 1.1, so that
        features of equal variance get unit variance and a feature that barely varies is not
        blown up (a digits pixel inked in one image of 1,797 would otherwise be a spike of 40
        standard deviations).
    encoder_weights_, encoder_biases_, decoder_weights_, decoder_biases_ : list of ndarray
        The trained layers of the kept start, as numpy arrays: a fitted model pickles and
        transforms anywhere, with or without torch's devices.
    n_components_, n_features_in_, feature_names_in_, n_iter_, history_, device_
        As for :class:`PICA`, except that ``history_`` records, in place of ``val_change``
        and ``val_change_half``, ``val_updates_without_improvement``: the updates since the
        held-out objective last fell by ``tol`` (training stops when it reaches
        ``n_iter_no_change``).

    See Also
    --------
    PICA : The linear version.

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
        "variance_weight": [Interval(Real, 0, None, closed="left")],
        "hidden_layer_sizes": [tuple],
        "activation": [StrOptions(set(_ACTIVATIONS))],
    }
    _per_feature_scaling = True  # hidden layers of one width see features of one scale

    def _game_settings(self, n_train, n_components):
        return self._settings_from_parameters(
            n_train,
            n_components,
            critic_batch_size=self._critic_rows(
                self._batch_rows(n_train), n_components, _CRITIC_BATCH_WORK
            ),
            warmup_steps=_WARMUP_STEPS,
        )

    def _game_policies(self):
        from ..game._selection import StartSelection
        from ..game._settings import GamePolicies
        from ..game._stopping import ObjectivePlateau

        return GamePolicies(
            stopping=(ObjectivePlateau(self.tol, self.n_iter_no_change),),
            selection=StartSelection(narrowing=_NARROWING, narrow_by="penalty"),
        )

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
        max_iter=5000,
        batch_size=512,
        learning_rate=5e-3,
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

    def _make_autoencoder(self, n_features, n_components, rows):
        hidden = tuple(int(width) for width in self.hidden_layer_sizes)
        if any(width < 1 for width in hidden):
            raise ValueError(f"hidden_layer_sizes must be positive, got {self.hidden_layer_sizes}.")
        # The codes are functions of every hidden layer's units: with more components than the
        # narrowest layer has units, some components are functions of the others, and no game
        # can make them independent.
        if hidden and n_components > min(hidden):
            requested = (
                f"n_components={n_components}"
                if self.n_components is not None
                else f"n_components=None keeps all {n_components} features, which"
            )
            raise ValueError(
                f"{requested} exceeds the narrowest hidden layer of the encoder "
                f"(hidden_layer_sizes={self.hidden_layer_sizes}): the components would lie on "
                f"at most {min(hidden)} dimensions and could not be independent. Pass "
                f"n_components <= {min(hidden)} or wider hidden_layer_sizes."
            )
        return _MLPAutoencoders(
            rows.sample(_MOMENT_ROWS), self.n_init, n_components, hidden, self.activation
        )

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
