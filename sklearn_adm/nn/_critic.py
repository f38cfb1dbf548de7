"""The ADM critic: batched probe networks and dependency predictors.

For ``d`` features the critic holds ``d`` probes ``psi_j: R -> R`` and ``d`` dependency
predictors ``phi_j: R^(d-1) -> R`` (paper, Sec. 4 "Implementation"). All of them are evaluated
at once: the predictors' first layer is one batched map per group of ``s`` features,
``R^s -> R^(s*h)``, whose self-connections are zero and kept zero, and every later layer
is a stack of ``d`` small weight matrices applied with one batched product. The probes are
built the same way, starting from one scalar per feature.

Hidden layers are laid out ``(d, h, n)``, features first and rows last: the first layer's
product is then ``(s*h, s) @ (s, n)``, which MKL computes faster on a CPU than the same
product laid out ``(n, s) @ (s, s*h)`` (``doc/design/critic.md`` has the timings).
"""

import math

import torch
from torch import nn

from .._numerics.workspace import Workspace

__all__ = ["ADMCritic", "dependence_mse"]

#: Variance added before dividing by a standard deviation. It only guards against division by
#: zero: :meth:`ADMCritic.forward` is written so that a shrunken target can never lower the MSE.
_EPS = 1e-5


def _standardize(z, eps=_EPS):
    """Centre each column with batch statistics and scale it to unit (biased) variance."""
    centred = z - z.mean(dim=0)
    return centred * torch.rsqrt(centred.square().mean(dim=0) + eps)


#: first layers' initial scale over torch's: units' kinks spread over standardised inputs
_FIRST_LAYER_GAIN = 3.0


_activation = nn.functional.gelu

#: entries of the first hidden layer, at most, when the critic is evaluated without gradients:
#: 32 MB in float32, under glibc's highest mmap threshold, so that each part reuses the
#: memory the last one freed
_EVALUATION_ELEMENTS = 2**23


def dependence_mse(target, prediction):
    r"""Per-feature error of predicting standardised targets, robust to shrunken targets.

    Returns :math:`1 - \big(2\,\overline{\tilde z_j \hat z_j} - \overline{\hat z_j^2}\big)`,
    the mean of :math:`(\tilde z_j - \hat z_j)^2` plus :math:`1 - \overline{\tilde z_j^2}`:
    the plain MSE when the target has unit variance (see :class:`ADMCritic`, Notes). The
    mean runs over the rows, the second-to-last axis of ``(..., n, d)``.
    """
    return 1.0 - (2.0 * target * prediction - prediction.square()).mean(dim=-2)


def _as_widths(hidden):
    widths = (hidden,) if isinstance(hidden, int) else tuple(hidden)
    if not widths or any(int(w) < 1 for w in widths):
        raise ValueError(f"hidden widths must be positive integers, got {hidden!r}.")
    return tuple(int(w) for w in widths)


class _FeatureWiseMLP(nn.Module):
    """``d`` independent MLPs ``R^(h_0) -> ... -> R``, one per feature, run as one.

    Takes the first layer's pre-activations ``(d, h_0, n)`` and returns ``(n, d)``. A hidden
    layer ``l`` holds a weight of shape ``(d, h_l, h_{l+1})`` applied with one batched
    product; the output layer is a weighted sum over the last hidden units.
    """

    def __init__(self, n_features, widths):
        super().__init__()
        self.weights = nn.ParameterList()
        self.biases = nn.ParameterList()
        for fan_in, fan_out in zip(widths[:-1], widths[1:], strict=True):
            self.weights.append(_uniform((n_features, fan_in, fan_out), 1 / math.sqrt(fan_in)))
            self.biases.append(_uniform((n_features, fan_out), 1 / math.sqrt(fan_in)))
        self.out_weight = _uniform((n_features, widths[-1]), 1 / math.sqrt(widths[-1]))
        self.out_bias = _uniform((n_features,), 1 / math.sqrt(widths[-1]))

    def forward(self, hidden):
        for weight, bias in zip(self.weights, self.biases, strict=True):
            hidden = torch.baddbmm(bias.unsqueeze(-1), weight.mT, _activation(hidden))
        # the readout as a batched vector-matrix product, faster than the products summed
        output = torch.bmm(self.out_weight.unsqueeze(1), _activation(hidden)).squeeze(1)
        return output.T + self.out_bias


def _self_connections(weight, first_feature=0, width=None):
    """The view of a first predictor layer ``(groups, s*h, s)``, or of a block of a group's
    rows ``(m*h, s)`` (the units of the ``m`` predictors from ``first_feature`` on), that holds
    the weights from each feature into its own predictor. ``width`` is ``h``; by default
    that of a full layer, ``s*h / s``."""
    *groups, rows, s = weight.shape
    h = rows // s if width is None else width
    view = weight.view(*groups, rows // h, h, s)
    return torch.diagonal(view, first_feature, dim1=-3, dim2=-1)


def _zero_self_gradient(weight):
    _self_connections(weight.grad).zero_()


def _uniform(shape, bound):
    return nn.Parameter(torch.empty(shape).uniform_(-bound, bound))


def _full_first_layer(inputs, weight, bias, out=None):
    """``weight @ inputs + bias`` per group, one GEMM that adds the bias as it writes (into
    ``out``, ``(groups, s*h, n)``, when given): inputs ``(groups, s, n)``, weight
    ``(groups, s*h, s)``, bias ``(d, h)``; returns ``(d, h, n)``."""
    hidden = torch.baddbmm(bias.view(len(weight), -1, 1), weight, inputs, out=out)
    return hidden.view(*bias.shape, -1)


class ADMCritic(nn.Module):
    r"""Probes and dependency predictors for all features, evaluated at once.

    ``forward(z)`` standardises the raw representations ``z`` with batch statistics, passes
    each feature through its probe ``psi_j`` (a small MLP), standardises the probe outputs with
    batch statistics, predicts each of them from all *other* standardised features with the
    dependency predictor ``phi_j``, and returns the per-feature mean squared error
    (Algorithm 1 of the paper). By Theorem 1, a critic trained to minimise this error reads
    :math:`1 - \mathrm{mCor}^2(z_j, z_{-j})`: 1 for a feature independent of the others
    (Corollary 1), 0 for a feature determined by them.

    Parameters
    ----------
    n_features : int
        Number of features ``d`` of the representations.
    critic_hidden : int or tuple of int, default=32
        Hidden widths of each dependency predictor (the paper's default: one layer of 32).
    probe_hidden : int or tuple of int, default=16
        Hidden widths of each probe network (the paper's default: one layer of 16).
    probes : bool, default=True
        If False, the target is the standardised feature itself: the critic then only detects
        dependence of the conditional mean (predictability minimisation).
    n_groups : int, default=1
        Split the features into this many equal consecutive blocks that are scored separately:
        each predictor sees only the other features of its own block. One batched critic then
        serves several independent representations (e.g. several restarts of an estimator).
    predictor_rank : int or None, default=None
        None: each predictor's first layer is a full ``(d - 1, h)`` matrix, the paper's critic,
        ``d * d * h`` weights in all (at ``d = 2048``: 512 MiB, and Adam keeps two more
        copies). An int ``r``: every predictor reads the same ``r`` learned projections of the
        features, less its own feature's part, so it still sees exactly the other features
        and its first layer has rank at most ``r``: ``d * r * (h + 1)`` weights. This changes
        the model: a rank too low misses dependence the full layer detects (what ``r = 8`` and
        ``r = 32`` detect at 64 to 2,048 features, and what they cost, is in
        :doc:`/benchmarks`).

    Notes
    -----
    The error returned for feature ``j`` is

    .. math:: \mathrm{MSE}_j = \overline{(\tilde z_j - \hat z_j)^2} + 1 - \overline{\tilde z_j^2}
              = 1 - \big(2\,\overline{\tilde z_j \hat z_j} - \overline{\hat z_j^2}\big),

    which is the plain mean squared error whenever the target :math:`\tilde z_j` has unit
    variance, as standardisation makes it. The correction matters when it does not: a probe
    that collapses to a near-constant has a target shrunk towards 0 by the small constant that
    guards the division, and a plain MSE would then fall towards 0 and report dependence that is
    not there. In the form above, the best prediction of a target with variance
    :math:`s^2 \le 1` lowers the error by at most :math:`s^2\,\mathrm{mCor}^2`, so shrinking the
    target can only hide dependence, never fake it. A constant feature has error 1.

    That guard is a variance of ``1e-5`` added before dividing, so a feature whose standard
    deviation in a batch is below about ``1e-2`` is shrunk towards 0 and its dependence read
    as less than it is. Representations of unit order, which the variance hinge of
    :class:`~sklearn_adm.ADMRegularizer` and of the estimators keeps, are read as they are;
    rescale smaller ones before the critic sees them.

    A critic changes nothing in the process it runs in. The estimators' fits keep the freed
    memory of one training step for the next while they run; a training loop of your own
    can set ``MALLOC_TRIM_THRESHOLD_`` and ``MALLOC_MMAP_THRESHOLD_`` for the same effect
    (the user guide's "ADM in your own PyTorch model").

    Examples
    --------
    >>> import torch
    >>> from sklearn_adm import ADMCritic
    >>> critic = ADMCritic(3)
    >>> mse = critic(torch.randn(256, 3))
    >>> mse.shape
    torch.Size([3])
    """

    def __init__(
        self,
        n_features,
        *,
        critic_hidden=32,
        probe_hidden=16,
        probes=True,
        n_groups=1,
        predictor_rank=None,
    ):
        super().__init__()
        if int(n_features) < 1 or int(n_groups) < 1 or int(n_features) % int(n_groups):
            raise ValueError(
                "n_features must be a positive multiple of n_groups, got "
                f"n_features={n_features!r}, n_groups={n_groups!r}."
            )
        d = self.n_features = int(n_features)
        self.n_groups = int(n_groups)
        group_size = d // self.n_groups
        self.probes = bool(probes)
        predictor_widths = _as_widths(critic_hidden)
        h = predictor_widths[0]
        if predictor_rank is not None and int(predictor_rank) < 1:
            raise ValueError(f"predictor_rank must be None or >= 1, got {predictor_rank!r}.")
        self.predictor_rank = None if predictor_rank is None else int(predictor_rank)
        #: layer-sized tensors a training step (``_critic_step``) reuses from the last one,
        #: and those the encoder's pass through the critic reuses (rows of another number)
        self.workspace = Workspace()
        self.gradient_workspace = Workspace()
        bound = _FIRST_LAYER_GAIN / math.sqrt(max(group_size - 1, 1))
        if self.predictor_rank is None:  # drawn first: a seed gives the weights it always gave
            self._init_full_input_layer(bound, h)
        else:
            self._init_low_rank_input_layer(self.predictor_rank, h)
        self.predictor_in_bias = _uniform((d, h), bound)
        self.predictor = _FeatureWiseMLP(d, predictor_widths)
        if self.probes:
            probe_widths = _as_widths(probe_hidden)
            self.probe_in = _uniform((d, probe_widths[0]), _FIRST_LAYER_GAIN)
            self.probe_in_bias = _uniform((d, probe_widths[0]), _FIRST_LAYER_GAIN)
            self.probe = _FeatureWiseMLP(d, probe_widths)

    def _init_full_input_layer(self, bound, h):
        d, group_size = self.n_features, self.n_features // self.n_groups
        # First predictor layer, one (s*h, s) matrix per group of s features, unit (j, u) from
        # input k: block j sees the other features of its group, its own input's weights are 0.
        # Drawn as one dense (d, d*h) map from inputs to units whose diagonal blocks are kept: a
        # seed draws the same numbers whatever the number of groups (scaled to the group's
        # fan-in).
        dense = torch.empty(d, d * h).uniform_(-bound, bound)
        dense = dense.view(self.n_groups, group_size, self.n_groups, group_size * h)
        self._set_predictor_in(torch.diagonal(dense, dim1=0, dim2=2).permute(2, 1, 0))

    def _init_low_rank_input_layer(self, rank, h):
        """A first predictor layer of rank ``rank``: one shared projection of each group's
        ``s`` features to ``rank`` values, ``(groups, s, rank)``, mapped to every predictor's
        ``h`` units, ``(groups, rank, s*h)``. Feature ``j``'s own path through the two is
        subtracted, so that predictor ``j`` reads exactly the other features."""
        groups, size = self.n_groups, self.n_features // self.n_groups
        # unit-variance projections of standardised features, then the full layer's scale
        projection = math.sqrt(3.0 / max(size - 1, 1))
        self.predictor_projection = _uniform((groups, size, rank), projection)
        self.predictor_mixing = _uniform((groups, rank, size * h), _FIRST_LAYER_GAIN / rank**0.5)
        self.register_parameter("predictor_in", None)

    def _set_predictor_in(self, blocks):
        """Make ``blocks`` ``(groups, s*h, s)`` the first predictor layer, with each feature's
        weights into its own predictor zero and kept zero: their gradient is zeroed in place
        as it is accumulated, so no masked copy of the layer is ever made."""
        self.predictor_in = nn.Parameter(blocks.contiguous())
        with torch.no_grad():
            _self_connections(self.predictor_in).zero_()
        self.predictor_in.register_post_accumulate_grad_hook(_zero_self_gradient)

    def __setstate__(self, state):
        """Unpickled and deep-copied critics keep the rule: tensors lose their hooks there."""
        super().__setstate__(state)
        if self.predictor_in is not None:
            self.predictor_in.register_post_accumulate_grad_hook(_zero_self_gradient)

    def group_features(self, groups):
        """The features of the groups listed, in that order: a list of column indices."""
        size = self.n_features // self.n_groups
        return [feature for group in groups for feature in range(group * size, (group + 1) * size)]

    @torch.no_grad()
    def keep_groups(self, groups):
        """Keep only the probes and predictors of the groups listed, in place and in that
        order: the critic then scores those groups' features alone, as trained so far."""
        groups = [int(group) for group in groups]
        rows = self.group_features(groups)

        def cut(parameter, index):
            return nn.Parameter(parameter[index].clone())

        if self.predictor_rank is None:
            self._set_predictor_in(self.predictor_in[groups].clone())
        else:
            self.predictor_projection = cut(self.predictor_projection, groups)
            self.predictor_mixing = cut(self.predictor_mixing, groups)
        self.predictor_in_bias = cut(self.predictor_in_bias, rows)
        mlps = [self.predictor] + ([self.probe] if self.probes else [])
        if self.probes:
            self.probe_in = cut(self.probe_in, rows)
            self.probe_in_bias = cut(self.probe_in_bias, rows)
        for mlp in mlps:
            for parameters in (mlp.weights, mlp.biases):
                for i, parameter in enumerate(parameters):
                    parameters[i] = cut(parameter, rows)
            mlp.out_weight = cut(mlp.out_weight, rows)
            mlp.out_bias = cut(mlp.out_bias, rows)
        self.n_features, self.n_groups = len(rows), len(groups)
        return self

    def _check_input(self, z):
        if not isinstance(z, torch.Tensor):
            raise TypeError(f"ADMCritic expects a torch.Tensor, got {type(z).__name__}.")
        if not z.is_floating_point():
            raise TypeError(f"ADMCritic expects a floating-point tensor, got {z.dtype}.")
        dtype = self.predictor_in_bias.dtype
        if z.dtype != dtype and not torch.is_autocast_enabled(z.device.type):
            raise TypeError(
                f"ADMCritic's parameters are {dtype} but z is {z.dtype}; convert one to the "
                f"other: z.to({dtype}) or critic.to({z.dtype})."
            )
        if z.ndim != 2 or z.shape[1] != self.n_features:
            raise ValueError(
                f"ADMCritic expects a (n_samples, {self.n_features}) tensor, "
                f"got shape {tuple(z.shape)}."
            )
        if z.shape[0] < 2:
            raise ValueError("ADMCritic needs at least 2 samples to compute batch statistics.")

    def targets(self, z_std):
        """Standardised probe outputs ``psi_j(z_j)`` for standardised ``z``, shape ``(n, d)``."""
        return _standardize(self._probe_outputs(z_std)) if self.probes else z_std

    def _probe_outputs(self, z_std):
        """The probes' outputs ``psi_j(z_j)`` before their standardisation (``z_std`` itself
        without probes)."""
        if not self.probes:
            return z_std
        # bias + z * weight per unit, (n, d) -> (d, h, n)
        features = z_std.T.unsqueeze(1)
        hidden = torch.addcmul(
            self.probe_in_bias.unsqueeze(-1), features, self.probe_in.unsqueeze(-1)
        )
        return self.probe(hidden)

    def predictions(self, z_std):
        """Predictions ``phi_j(z_{-j})`` for standardised ``z``, shape ``(n, d)``."""
        # The first layer of all d predictors at once, one matmul per group.
        if self.predictor_rank is not None:
            hidden = self._low_rank_first_layer(z_std) + self.predictor_in_bias.unsqueeze(-1)
            return self.predictor(hidden)
        inputs = z_std.T.contiguous().view(self.n_groups, -1, len(z_std))
        return self.predictor(_full_first_layer(inputs, self.predictor_in, self.predictor_in_bias))

    def _low_rank_first_layer(self, z_std):
        """The low-rank first layer's output without its bias, ``(d, h, n)``: the shared
        projection mapped to every predictor's units, less each feature's own path."""
        n, projection, mixing = len(z_std), self.predictor_projection, self.predictor_mixing
        groups, size, rank = projection.shape
        features = z_std.T.contiguous()  # (d, n), rows last
        shared = torch.bmm(projection.mT, features.view(groups, size, n))  # (groups, rank, n)
        hidden = torch.bmm(mixing.mT, shared).view(self.n_features, -1, n)
        own = torch.einsum("gsr,grsh->gsh", projection, mixing.view(groups, rank, size, -1))
        own = own.reshape(self.n_features, -1, 1)
        return torch.addcmul(hidden, features.unsqueeze(1), own, value=-1)

    def input_layer_gradient(self, inputs, grad_hidden, group, features, out):
        """Gradient of the units of the predictors ``features`` (a slice of ``m``) of group
        ``group`` in the first predictor layer, ``(m*h, s)``, from the layer's input
        ``(groups, s, n)`` and its output's gradient ``(d, h, n)``, with the self-connections'
        entries zero, written into ``out``."""
        d, h, n = grad_hidden.shape
        rows = grad_hidden.view(self.n_groups, -1, h, n)[group, features].flatten(end_dim=1)
        grad = torch.mm(rows, inputs[group].T, out=out)
        _self_connections(grad, features.start, width=h).zero_()
        return grad

    def forward(self, z):
        """Per-feature MSE of predicting each standardised probe output from the other features.

        Parameters
        ----------
        z : torch.Tensor of shape (n_samples, n_features)
            Raw representations; standardised here with batch statistics.

        Returns
        -------
        torch.Tensor of shape (n_features,)
            ``MSE_j``, about 1 for a feature independent of the others, lower the more it
            depends on them.
        """
        return dependence_mse(*self.target_and_prediction(z))

    def target_and_prediction(self, z):
        """Standardise ``z`` and return the probe targets and the predictions, each ``(n, d)``.

        Without gradients (an evaluation), the rows pass in parts whose first hidden layer
        holds at most ``_EVALUATION_ELEMENTS`` entries (at 256 features and 16,384 rows that
        layer alone is half a GB); the statistics that standardise ``z`` and the targets are
        still those of all rows."""
        self._check_input(z)
        z_std = _standardize(z)
        rows_at_once = max(1, _EVALUATION_ELEMENTS // self.predictor_in_bias.numel())
        if torch.is_grad_enabled() or len(z_std) <= rows_at_once:
            return self.targets(z_std), self.predictions(z_std)
        parts = [
            (self._probe_outputs(rows), self.predictions(rows))
            for rows in z_std.split(rows_at_once)
        ]
        targets = torch.cat([outputs for outputs, _ in parts])
        targets = _standardize(targets) if self.probes else targets
        return targets, torch.cat([prediction for _, prediction in parts])
