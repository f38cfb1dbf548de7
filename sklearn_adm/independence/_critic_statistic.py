"""The learned estimate as the scorer's statistic (``metric="adm"``): an
:class:`~sklearn_adm.ADMCritic` trained on part of the rows, read on the others, which it never
saw, so that every test of it is exact at any sample size."""

import numpy as np
import torch

from .._data.chunked import ChunkedArray
from .._data.rows import split_rows
from .._data.scaling import rescaled
from ..nn._critic import ADMCritic, _standardize
from ..nn._training import calibrate, calibrated_fit, train_critic
from ._conditional import local_statistics
from ._linear_statistic import unit_columns
from ._neighbours import neighbour_predictions
from ._permutation import held_out_apart, largest_p_value, p_values
from ._result import two_sample_result
from ._statistic import Statistic

#: options of the learned metric, and their defaults
CRITIC_DEFAULTS = {
    "critic_hidden": 32,
    "probe_hidden": 16,
    "probes": True,
    "predictor_rank": None,
    "max_iter": 500,
    "batch_size": 512,
    "critic_learning_rate": 2e-2,
    "validation_fraction": 0.3,
}
#: a test's critic unless critic_params says otherwise: long training, half the rows held out
TEST_CRITIC = {"max_iter": 2000, "validation_fraction": 0.5}
#: ridge of the held-out linear regressions, on standardised columns
_LINEAR_RIDGE = 1e-6
#: training rows, at most, among which the two-sample test looks for nearest neighbours
_NEIGHBOUR_ROWS = 4096
#: training rows of a streamed array, at most, that the linear floor is fitted on
_FLOOR_ROWS = 65_536
#: entries of the critic's first hidden layers, at most, when it reads a stack of permutations
_NULL_CHUNK = 2**24


class CriticStatistic(Statistic):
    """The critic's calibrated held-out ``1 - MSE`` per column: an estimate of the squared
    maximal correlation of each column with the others. ``critic_params``: the user's
    options over :data:`CRITIC_DEFAULTS` (and :data:`TEST_CRITIC` in a test)."""

    streams = True
    reads_z = True

    def __init__(self, critic_params=None):
        self.critic_params = critic_params or {}

    def per_feature(self, Z, rng, device):
        return self._estimate(Z, rng, device, groups=None)

    def pairwise(self, Z, rng, device):
        d = Z.shape[1]
        first, second = np.triu_indices(d, k=1)
        pairs = np.column_stack([first, second]).ravel()  # columns (j, l) side by side
        dependence = self._estimate(Z[:, pairs], rng, device, groups=len(first)).reshape(-1, 2)
        result = np.eye(d) * (Z.std(axis=0) > 0)
        result[first, second] = result[second, first] = dependence.mean(axis=1)
        return result

    def test_columns(self, Z, n_permutations, rng, device):
        critic, _, held_out, _ = self._trained_critic(Z, rng, device, None, exact=True)

        def shuffle_columns(z, copies):
            index = np.argsort(rng.random_sample((copies, *z.shape)), axis=1)
            index = torch.as_tensor(index, device=z.device)
            return torch.gather(z.expand(copies, -1, -1), 1, index)

        observed, permuted, estimate, floor = _critic_null(
            critic, held_out, n_permutations, shuffle_columns
        )
        return estimate, p_values(observed, permuted), floor

    def test_samples(self, X, Y, given, n_permutations, rng, device, scaled=None, early_stop=None):
        """The critic's statistics on the held-out rows with Y's held-out rows shuffled among
        themselves; beside them, without Z, nearest-neighbour predictions from the other
        sample and the correlation of the samples' spreads over all rows; given Z, the
        distance test's local statistics. The p-value is that of the largest, each
        standardised over the permutations."""
        XY = np.hstack([X, Y])
        groups = None if given is None else given.groups
        method = "permutation" if given is None else "local permutation"
        split = X.shape[1]
        if groups is not None:  # the critic reads Z beside X: X's relation to Y may turn with Z
            scaled = rescaled(scaled)
            XY = np.hstack([scaled[:, :split], rescaled(given.Z), scaled[:, split:]])
            split += given.Z.shape[1]
        critic, train, held_out, val_rows = self._trained_critic(XY, rng, device, None, exact=True)
        # Y's rows move within groups (all rows one group without Z), the held-out rows among
        # themselves: the critic reads the held-out rows, the statistics over all rows all
        parts = np.zeros(len(XY), dtype=np.int64) if groups is None else groups
        all_orders = held_out_apart(parts, val_rows, n_permutations, rng)
        position = np.empty(len(XY), dtype=np.intp)
        position[val_rows] = np.arange(len(val_rows))
        orders = position[all_orders[:, val_rows]]
        shuffled = 0  # Y's held-out rows read in the order of each of the orders in turn

        def shuffle_rows_of_y(z, copies):
            nonlocal shuffled
            q = z.shape[1] - split
            order = orders[shuffled : shuffled + copies]
            shuffled += copies
            rows = torch.as_tensor(order[..., None]).to(z.device).expand(-1, -1, q)
            y = torch.gather(z[:, split:].expand(copies, -1, -1), 1, rows)
            return torch.cat([z[:, :split].expand(copies, -1, -1), y], dim=-1)

        observed, permuted, estimate, floor = _critic_null(
            critic, held_out, n_permutations, shuffle_rows_of_y
        )
        if groups is None:  # the critic's nearest-neighbour statistics beside its own, and
            # the magnitudes' correlation over all rows (a ring: half the rows miss it)
            reference = rng.permutation(len(train))[:_NEIGHBOUR_ROWS]
            near_observed, near_permuted = _neighbour_null(
                critic, train[reference], held_out, split, orders
            )
            magnitude, magnitude_permuted = _magnitude_null(
                XY[:, :split], XY[:, split:], all_orders
            )
            observed = np.r_[observed, near_observed, magnitude]
            permuted = np.column_stack([permuted, near_permuted, magnitude_permuted])
        else:  # the distance test's local statistics beside the critic's
            # Z is read, not predicted: how well Y's residual predicts Z (through a scale
            # that Z drives) rests on Z's small differences within a group, which the
            # permutations do not keep (design/conditional-test)
            read = np.arange(XY.shape[1])
            read = (read >= X.shape[1]) & (read < split)
            local, local_permuted = local_statistics(X, Y, given.blocks, all_orders)
            observed = np.r_[observed[~read], local]
            permuted = np.hstack([permuted[:, ~read], local_permuted])
        p_value = largest_p_value(observed, permuted)
        return two_sample_result(estimate.mean(), p_value, floor.mean(), n_permutations, method)

    def _estimate(self, Z, rng, device, groups):
        """1 - calibrated held-out critic MSE per column, clipped to [0, 1]. Per feature,
        never below the held-out R^2 of a linear regression on the same rows: the squared
        maximal correlation that the critic estimates is at least the linear one, and a
        critic trained for a few thousand steps on few rows can fall short of it."""
        critic, train, held_out, _ = self._trained_critic(Z, rng, device, groups)
        _, mse = calibrate(critic, held_out)
        dependence = np.clip(1.0 - mse.cpu().numpy().astype(np.float64), 0.0, 1.0)
        if groups is None:
            dependence = np.maximum(dependence, _linear_held_out(train, held_out))
        return dependence

    def params(self, exact):
        """The critic's options: the defaults, a test's (``exact``), the user's."""
        return {**CRITIC_DEFAULTS, **(TEST_CRITIC if exact else {}), **self.critic_params}

    def _trained_critic(self, Z, rng, device, groups, exact=False):
        """An :class:`ADMCritic` trained on part of the rows of ``Z``, those rows, the other
        rows (tensors on ``device``) and their indices (None for a streamed array). With too
        few rows to hold some out, the same rows serve both, unless ``exact``: a test needs
        rows the critic never saw, and trains it longer."""
        params = self.params(exact)
        seed = int(rng.randint(np.iinfo(np.int32).max))
        if isinstance(Z, ChunkedArray):
            train, held_out = _streamed_split(Z, params["validation_fraction"], seed, device)
            val_rows = None
        else:
            train_rows, val_rows = split_rows(len(Z), params["validation_fraction"], rng)
            if exact and len(train_rows) == len(Z):
                raise ValueError(
                    f"The 'adm' test needs rows the critic does not train on: {len(Z)} rows "
                    f"with validation_fraction={params['validation_fraction']} leave too few; "
                    "pass more rows or a larger critic_params['validation_fraction']."
                )
            z = torch.as_tensor(Z, dtype=torch.float32, device=device)
            train, held_out = z[train_rows], z[val_rows]
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            critic = ADMCritic(
                Z.shape[1],
                critic_hidden=params["critic_hidden"],
                probe_hidden=params["probe_hidden"],
                probes=params["probes"],
                n_groups=groups or 1,
                predictor_rank=params["predictor_rank"],
            ).to(device)
        train_critic(
            critic,
            train,
            steps=params["max_iter"],
            batch_size=params["batch_size"],
            learning_rate=params["critic_learning_rate"],
            generator=torch.Generator(device=device).manual_seed(seed),
        )
        if not torch.is_tensor(train):  # streamed: a sample of its rows for the linear floor
            train = train.sample(_FLOOR_ROWS)
        return critic, train, held_out, val_rows


def _streamed_split(source, validation_fraction, seed, device):
    """The critic's training rows of a :class:`~sklearn_adm._data.chunked.ChunkedArray`
    (streamed) and its held-out rows (at most ``MAX_HELD_OUT_ROWS``, read once), centred and
    scaled by the largest magnitude as :func:`~sklearn_adm._data.scaling.rescaled` scales
    rows in memory."""
    from .._data.streaming import StreamedRows, held_out_rows

    held_out = held_out_rows(len(source), validation_fraction, seed)
    moments, held_out_values = source.moments_and_rows(held_out)

    def scale_rows(rows):
        return (rows.astype(np.float64) / moments.unit - moments.mean).astype(np.float32)

    train = StreamedRows(source, held_out, scale_rows, None, seed, device)
    return train, torch.as_tensor(scale_rows(held_out_values), device=device)


@torch.no_grad()
def _critic_null(critic, z, n_permutations, shuffle):
    """What a trained critic reads on the held-out rows ``z`` and on ``n_permutations``
    shuffles of them (``shuffle(z, copies)`` returns ``(copies, n, d)``).

    Returns, per column, the held-out correlation of each target with its prediction
    (observed ``(d,)``, permuted ``(n_permutations, d)``): a continuous statistic, the test's;
    and the permutation mean of the calibrated estimate ``1 - MSE`` (:func:`calibrated_fit`),
    the floor. The calibrated estimate itself is 0 whenever the correlation is negative: its
    ties would make the test conservative.

    The shuffles are read a chunk at a time, stacked: permuting rows within a column keeps its
    values, so the critic's batch statistics over a stack are those of each copy.
    """
    n, d = z.shape

    def read(stack):
        target, prediction = critic.target_and_prediction(stack.reshape(-1, d))
        target, prediction = target.view(stack.shape), prediction.view(stack.shape)
        power = prediction.square().mean(dim=-2).clamp_min(torch.finfo(z.dtype).tiny)
        correlation = (target * prediction).mean(dim=-2) / power.sqrt()
        estimate = (1.0 - calibrated_fit(target, prediction)[1]).clamp(0.0, 1.0)
        return correlation.cpu().numpy().astype(np.float64), estimate.cpu().numpy()

    width = critic.predictor_in_bias.shape[1] + (critic.probe_in.shape[1] if critic.probes else 0)
    copies = max(1, _NULL_CHUNK // (n * d * width))
    observed, estimate = read(z[None])
    chunks = [
        read(shuffle(z, min(copies, n_permutations - done)))
        for done in range(0, n_permutations, copies)
    ]
    permuted = np.concatenate([correlation for correlation, _ in chunks])
    floor = np.concatenate([estimates for _, estimates in chunks]).mean(axis=0)
    return observed[0], permuted, estimate[0].astype(np.float64), floor.astype(np.float64)


@torch.no_grad()
def _neighbour_null(critic, train, held_out, split, orders):
    """Held-out correlation of each column of ``[X, Y]`` (columns ``:split`` and ``split:``)
    and of its probe target with their nearest-neighbour predictions from the other sample
    (:func:`neighbour_predictions`, fitted on the training rows): observed ``(2 d,)``, and
    with Y's held-out rows in each of the ``orders`` ``(n_permutations, n)``. The raw columns
    are targets too: where the critic fits badly, its probes can be poor targets."""

    def targets(z):
        probes = critic.targets(_standardize(z))
        return torch.cat([probes, z], dim=1).cpu().double().numpy()

    targets_train, targets_test = targets(train), targets(held_out)
    train, test = targets_train[:, -critic.n_features :], targets_test[:, -critic.n_features :]
    columns = np.arange(2 * critic.n_features) % critic.n_features < split  # X's targets
    from_y, _ = neighbour_predictions(train[:, split:], targets_train[:, columns], test[:, split:])
    from_x, _ = neighbour_predictions(train[:, :split], targets_train[:, ~columns], test[:, :split])
    # Permuting Y's rows moves Y's targets and the predictions made from Y with them.
    moved = unit_columns(np.hstack([from_y, targets_test[:, ~columns]]))
    fixed = unit_columns(np.hstack([targets_test[:, columns], from_x]))
    observed = (moved * fixed).sum(axis=0)
    permuted = np.stack([(moved[order] * fixed).sum(axis=0) for order in orders])
    return observed, permuted


def _magnitude_null(X, Y, orders):
    """The sum of the squared correlations of every column's distance to its median in X
    with every one in Y, over all rows: observed, and with Y's rows in each of ``orders``.

    A relation of X's spread to Y's (a ring: where |x| is large, |y| is small) is a
    dependence a fixed statistic finds on all rows, where the critic, held out on half of
    them, sees it with half the power (design/defaults)."""
    a = unit_columns(np.abs(X - np.median(X, axis=0)))
    b = unit_columns(np.abs(Y - np.median(Y, axis=0)))
    observed = ((a.T @ b) ** 2).sum()
    return observed, np.array([((a.T @ b[order]) ** 2).sum() for order in orders])


def _linear_held_out(train, held_out):
    """Held-out R^2 of each column regressed linearly on the others (fitted on ``train``),
    calibrated as the critic's and clipped to [0, 1]. The regressions of all columns come
    from one inverse covariance ``P``: column ``j``'s residual is ``(z P)_j / P_jj``."""
    train, held_out = train.double(), held_out.double()
    tiny = torch.finfo(train.dtype).tiny
    mean, spread = train.mean(dim=0), train.std(dim=0, correction=0).clamp_min(tiny)
    correlation = torch.cov(((train - mean) / spread).T, correction=0).reshape(len(mean), -1)
    eye = torch.eye(len(mean), dtype=train.dtype, device=train.device)
    precision = torch.linalg.inv(correlation + _LINEAR_RIDGE * eye)
    centred = (held_out - mean) / spread
    prediction = centred - centred @ precision / precision.diagonal()
    scale = centred.std(dim=0, correction=0).clamp_min(tiny)
    _, mse = calibrated_fit(centred / scale, prediction / scale)
    return np.clip(1.0 - mse.cpu().numpy(), 0.0, 1.0)
