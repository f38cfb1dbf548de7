"""The game's two derivatives of an :class:`~sklearn_adm.ADMCritic`, written out by hand.

The game differentiates the critic's error in two ways, each once per pass: with respect to
the critic's parameters on detached representations (its training step) and with respect to
the representations alone (the encoder's step). Each follows from a handful of batched
products, with no autograd graph to record and walk; at the sizes of a fit (tens of features,
hundreds of rows) a step was mostly that bookkeeping. Both are checked against autograd in
the tests.

Hidden layers are laid out ``(d, h, n)`` as in :mod:`~sklearn_adm.nn._critic`. In a training step
the layer-sized tensors are kept in the critic's workspace from one step to the next and overwritten
by the backward pass, and a first predictor layer larger than the optimizer's block is updated by
blocks (:meth:`~sklearn_adm.nn._optim.CriticAdam.update_input_layer`), its whole gradient never
formed.
"""

import torch

from ._critic import _EPS, _activation, _full_first_layer, _self_connections

_gelu_backward = torch.ops.aten.gelu_backward


def critic_step(critic, optimizer, z):
    """One update of ``critic`` by ``optimizer`` (a :class:`~sklearn_adm.nn._optim.CriticAdam`)
    on the detached ``z`` ``(n, d)``: the loss of :meth:`ADMCritic.forward`, each group's mean error
    summed, so that a group trains as it would alone however many groups share the critic.
    Returns the loss."""
    optimizer.zero_grad()
    with torch.no_grad():
        forward = _CriticPass(critic, z.detach(), workspace=critic.workspace)
        weights = forward.errors.new_full((1,), critic.n_groups / critic.n_features)
        loss = forward.errors.view(critic.n_groups, -1).mean(dim=1).sum()
        for parameter, gradient in forward.parameter_gradients(weights, optimizer):
            parameter.grad = gradient
    optimizer.step()
    return loss


@torch.no_grad()
def dependence_gradient(critic, z, alpha, weights):
    """``sum_j weights_j MSE_j`` of ``alpha_j``-shrunk predictions on ``z`` ``(n, d)``, the
    errors ``MSE_j`` ``(d,)`` and the sum's gradient with respect to ``z``, ``(n, d)``."""
    forward = _CriticPass(critic, z, alpha=alpha, workspace=critic.gradient_workspace)
    return forward.errors, forward.input_gradient(weights)


class _CriticPass:
    """The critic's forward pass on ``z`` ``(n, d)``, kept for a backward pass: the
    standardised features ``(d, n)``, the targets and the ``alpha``-shrunk predictions
    ``(d, n)``, and the per-feature errors ``1 - mean(2 t q - q^2)`` (``dependence_mse``)."""

    def __init__(self, critic, z, alpha=None, workspace=None):
        self.critic, self.alpha = critic, alpha
        centred = z.T - z.mean(dim=0).unsqueeze(-1)
        self.inverse_sd = torch.rsqrt(centred.square().mean(dim=1, keepdim=True) + _EPS)
        self.features = features = (centred * self.inverse_sd).contiguous()  # (d, n)
        self.n = n = features.shape[1]
        if critic.probes:
            layer = (
                None
                if workspace is None
                else workspace.get(
                    "probe layer", features, (len(features), critic.probe_in.shape[1], n)
                )
            )
            probe_in = torch.addcmul(
                critic.probe_in_bias.unsqueeze(-1),
                features.unsqueeze(1),
                critic.probe_in.unsqueeze(-1),
                out=layer,
            )
            self.probe = _MLPPass(critic.probe, probe_in, workspace, "probe")
            output = self.probe.output
            centred = output - output.mean(dim=1, keepdim=True)
            self.target_sd = torch.rsqrt(centred.square().mean(dim=1, keepdim=True) + _EPS)
            self.target = centred * self.target_sd
        else:
            self.target = features
        self.first = _FirstPredictorLayer(critic, features, workspace)
        self.predictor = _MLPPass(critic.predictor, self.first.output, workspace, "predictor")
        self.prediction = self.predictor.output
        if alpha is not None:
            self.prediction = self.prediction * alpha.unsqueeze(-1)
        self.errors = 1.0 - (2.0 * self.target - self.prediction).mul(self.prediction).mean(dim=1)

    def _output_gradients(self, weights):
        """Gradients of ``sum_j weights_j MSE_j`` with respect to the predictors' outputs
        (before the shrinkage) and the targets, each ``(d, n)``."""
        scale = (2.0 / self.n) * weights.unsqueeze(-1)
        grad_prediction = (self.prediction - self.target).mul_(scale)
        grad_target = self.prediction.mul(-scale)
        if self.alpha is not None:
            grad_prediction.mul_(self.alpha.unsqueeze(-1))
        return grad_prediction, grad_target

    def _target_to_probe_output(self, grad_target):
        """Through the targets' standardisation: ``t = c r``, ``r = (mean c^2 + eps)^-1/2``,
        ``c = p - mean p``."""
        target = self.target
        grad = grad_target - target * (grad_target * target).mean(dim=1, keepdim=True)
        grad.mul_(self.target_sd)
        return grad - grad.mean(dim=1, keepdim=True)

    def parameter_gradients(self, weights, optimizer):
        """``(parameter, gradient)`` pairs of ``sum_j weights_j MSE_j``; the tensors of the
        forward pass are overwritten. A full first layer above the block of ``optimizer`` is
        updated by it and has no pair."""
        critic, features = self.critic, self.features
        gradients = []
        grad_prediction, grad_target = self._output_gradients(weights)
        grad_first = self.predictor.backward(grad_prediction, gradients)
        self.first.parameter_gradients(grad_first, optimizer, gradients)
        if critic.probes:
            grad_output = self._target_to_probe_output(grad_target)
            grad_probe_in = self.probe.backward(grad_output, gradients)
            gradients.append((critic.probe_in_bias, grad_probe_in.sum(dim=-1)))
            grad_probe_in.mul_(features.unsqueeze(1))
            gradients.append((critic.probe_in, grad_probe_in.sum(dim=-1)))
        return gradients

    def input_gradient(self, weights):
        """Gradient of ``sum_j weights_j MSE_j`` with respect to ``z``, ``(n, d)``."""
        critic = self.critic
        grad_prediction, grad_target = self._output_gradients(weights)
        grad = self.first.input_gradient(self.predictor.backward(grad_prediction))
        if critic.probes:
            grad_output = self._target_to_probe_output(grad_target)
            grad_probe_in = self.probe.backward(grad_output)
            grad += (grad_probe_in * critic.probe_in.unsqueeze(-1)).sum(dim=1)
        else:
            grad += grad_target
        # through the standardisation of z, as through the targets'
        features = self.features
        grad -= features * (grad * features).mean(dim=1, keepdim=True)
        grad.mul_(self.inverse_sd)
        return (grad - grad.mean(dim=1, keepdim=True)).T


class _FirstPredictorLayer:
    """The predictors' first layer on the standardised features ``(d, n)``, its output
    ``(d, h, n)``: a full ``(s*h, s)`` map per group with zero self-connections, or the low-rank
    map of ``predictor_rank`` (see :class:`~sklearn_adm.ADMCritic`)."""

    def __init__(self, critic, features, workspace):
        self.critic, self.features = critic, features
        groups, n = critic.n_groups, features.shape[1]
        self.inputs = features.view(groups, -1, n)  # (groups, s, n)
        bias = critic.predictor_in_bias
        if critic.predictor_rank is None:
            layer = critic.predictor_in
            shape = (groups, layer.shape[1], n)
            out = None if workspace is None else workspace.get("first layer", features, shape)
            self.output = _full_first_layer(self.inputs, layer, bias, out)
        else:
            self.output = critic._low_rank_first_layer(features.T) + bias.unsqueeze(-1)

    def _rows(self, grad):
        return grad.view(self.critic.n_groups, -1, grad.shape[-1])  # (groups, s*h, n)

    def parameter_gradients(self, grad, optimizer, gradients):
        """Append the layer's gradients given its output's ``(d, h, n)``; a full layer above
        the optimizer's block is updated by ``optimizer`` instead."""
        critic, inputs, grad_rows = self.critic, self.inputs, self._rows(grad)
        gradients.append((critic.predictor_in_bias, grad.sum(dim=-1)))
        if critic.predictor_rank is not None:
            self._low_rank_gradients(grad, grad_rows, gradients)
        elif optimizer.updates_input_layer:
            optimizer.update_input_layer(inputs, grad)
        else:
            grad_layer = torch.bmm(grad_rows, inputs.mT)
            _self_connections(grad_layer).zero_()
            gradients.append((critic.predictor_in, grad_layer))

    def _low_rank_gradients(self, grad, grad_rows, gradients):
        """hidden = mixing^T (projection^T x) - own x, own = the features' own paths."""
        critic, inputs = self.critic, self.inputs
        projection, mixing = critic.predictor_projection, critic.predictor_mixing
        groups, size, rank = projection.shape
        shared = torch.bmm(projection.mT, inputs)  # (groups, rank, n)
        grad_mixing = torch.bmm(shared, grad_rows.mT)  # (groups, rank, s*h)
        grad_projection = torch.bmm(inputs, torch.bmm(mixing, grad_rows).mT)  # (groups, s, rank)
        grad_own = -(grad * self.features.unsqueeze(1)).sum(dim=-1).view(groups, size, -1)
        mixing_blocks = mixing.view(groups, rank, size, -1)
        grad_projection += torch.einsum("gsh,grsh->gsr", grad_own, mixing_blocks)
        grad_mixing += torch.einsum("gsr,gsh->grsh", projection, grad_own).flatten(start_dim=2)
        gradients.append((projection, grad_projection))
        gradients.append((mixing, grad_mixing))

    def input_gradient(self, grad):
        """The gradient of the layer's input ``(d, n)`` given its output's ``(d, h, n)``."""
        critic, grad_rows = self.critic, self._rows(grad)
        n = grad.shape[-1]
        if critic.predictor_rank is None:  # self-connections are zero: no own path
            return torch.bmm(critic.predictor_in.mT, grad_rows).view(-1, n)
        projection, mixing = critic.predictor_projection, critic.predictor_mixing
        groups, size, rank = projection.shape
        shared = torch.bmm(mixing, grad_rows)  # (groups, rank, n)
        own = torch.einsum("gsr,grsh->gsh", projection, mixing.view(groups, rank, size, -1))
        through = torch.bmm(projection, shared).view(-1, n)
        return through - (grad * own.reshape(len(grad), -1, 1)).sum(dim=1)


class _MLPPass:
    """The forward pass of a :class:`~sklearn_adm.nn._critic._FeatureWiseMLP` on the first layer's
    pre-activations ``(d, h_0, n)``, output ``(d, n)``, kept for its backward pass. With a
    ``workspace``, the last activations are written into its tensor ``name``."""

    def __init__(self, mlp, hidden, workspace, name):
        self.mlp = mlp
        self.inputs = [hidden]  # each layer's pre-activations
        for weight, bias in zip(mlp.weights, mlp.biases, strict=True):
            hidden = torch.baddbmm(bias.unsqueeze(-1), weight.mT, _activation(hidden))
            self.inputs.append(hidden)
        last = self.inputs[-1]
        if workspace is None:
            self.activation = _activation(last)
        else:
            self.activation = workspace.get(f"{name} activation", last)
            torch.ops.aten.gelu.out(last, out=self.activation)
        readout = torch.bmm(mlp.out_weight.unsqueeze(1), self.activation).squeeze(1)
        self.output = readout + mlp.out_bias.unsqueeze(-1)

    def backward(self, grad_output, gradients=None):
        """The gradient of the first layer's pre-activations ``(d, h_0, n)`` given the
        output's ``(d, n)``, written over the forward pass's activations. With a list
        ``gradients``, each parameter's gradient is appended to it."""
        mlp, grad = self.mlp, grad_output.unsqueeze(1)
        if gradients is not None:
            gradients.append((mlp.out_bias, grad_output.sum(dim=-1)))
            gradients.append((mlp.out_weight, self.activation.mul_(grad).sum(dim=-1)))
        grad_hidden = torch.mul(grad, mlp.out_weight.unsqueeze(-1), out=self.activation)
        grad_hidden = _gelu_backward.grad_input(
            grad_hidden, self.inputs[-1], grad_input=grad_hidden
        )
        layers = zip(mlp.weights, mlp.biases, self.inputs[:-1], strict=True)
        for weight, bias, hidden in reversed(list(layers)):
            if gradients is not None:
                gradients.append((weight, torch.bmm(_activation(hidden), grad_hidden.mT)))
                gradients.append((bias, grad_hidden.sum(dim=-1)))
            grad_hidden = _gelu_backward(torch.bmm(weight, grad_hidden), hidden)
        return grad_hidden
