"""PICA: Principal and Independent Component Analysis (paper, Sec. 5.1 and App. B)."""

from numbers import Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._data.chunked import code_moments
from ._base import _n_components_constraint
from ._linear import (
    DECAY_UPDATES,
    RANK_WINDOW,
    WARMUP_STEPS,
    LinearADMTransformer,
    flip_signs,
)

#: the encoder's first step in radians with learning_rate='auto' (weight <= 1, <= 32 components)
_AUTO_LEARNING_RATE = 0.0085
_AUTO_COMPONENTS = 32
#: rows up to which the step halves after DECAY_UPDATES updates; on more, it halves after
#: as many passes over the rows, up to _MAX_DECAY_GROWTH times as many updates
_DECAY_ROWS = 2500
_MAX_DECAY_GROWTH = 4.0
#: rows x components of the critic's minibatches (a step costs their product)
_CRITIC_BATCH_WORK = 4096
#: after update 10 the two leading starts play on, after update 30 the leader alone
_NARROWING = ((10, 2), (30, 1))


class PICA(LinearADMTransformer):
    r"""Principal and Independent Component Analysis.

    A linear autoencoder trained to reconstruct the data while an ADM critic tries to predict
    each component from the others (paper, Eq. 6). Where PCA only makes its components
    uncorrelated, PICA makes them independent: it chooses the subspace of most variance whose
    components can be made mutually independent, giving up variance where independence is worth
    more (``dependence_weight``). With ``dependence_weight=0`` it is PCA.

    The paper ties the decoder to the encoder (its transpose), which can only rotate PCA's
    scores orthogonally. Here the decoder is the least-squares one, which lets the components
    be any basis of their subspace, like FastICA's: the game chooses the subspace against the
    critic, and inside it the components climb FastICA's negentropy contrast (a critic that
    also turned them made them more dependent). See the user guide.

    Parameters
    ----------
    n_components : int, float, "mle" or None, default=None
        Number of components. None keeps ``n_features``. A float in (0, 1) keeps the fewest
        principal directions' number that explains more than that share of the variance,
        and ``"mle"`` Minka's choice, as :class:`~sklearn.decomposition.PCA` resolves them
        (``n_components_`` holds the number). With as many components as the
        data have directions of variance there is no subspace to choose: the components
        are then the rotation of highest contrast of all of them (FastICA's), solved once,
        and no game is played.
    dependence_weight : float, default=0.4
        Weight :math:`\lambda` of the dependence term ``1 - mean critic MSE``. 0 turns ADM off.
        Larger values give up more variance for more independence (the design
        page ``doc/design/pica-defaults.md`` says how the default was chosen).
    reconstruction_weight : float, default=1.0
        Weight of the reconstruction term: the share of PCA's explained variance that the
        components give up (0 on PCA's subspace), computed exactly from the covariance, so
        that neither weight depends on the units of ``X`` or on ``n_components``.
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
        Rows per minibatch of the encoder; None (or a size above the number of training rows)
        uses them all. The critic's minibatches hold ``max(128, 4096 // n_components)`` rows
        when that is fewer.
    learning_rate : "auto" or float, default="auto"
        Initial angle, in radians, by which each direction of the subspace turns per update
        (in whitened coordinates); it decays as ``1 / (1 + t / h)`` so that the game, whose
        late steps are driven by noise, settles, with ``h = 25`` updates up to 2,500
        training rows and in proportion to the rows beyond, up to 100: more rows reveal
        finer dependence, and the game makes as many passes over them (at a given
        ``batch_size``). "auto" is
        ``0.0085 * sqrt(max(1, dependence_weight) * max(1, n_components / 32))`` (the
        design page ``doc/design/pica-defaults.md`` says why).
    critic_learning_rate : float, default=0.02
        Adam step size of the critic.
    tol : float, default=2e-2
        Convergence threshold: training stops when the representation of the held-out rows
        (by the averaged encoder of the leading start) has changed by less than ``tol``,
        relative to its variance, over the last ``n_iter_no_change`` encoder updates, or by
        less than ``tol / 32`` over the last half of them: a game that has stopped moving
        need not wait out the whole window (codes that still drift change at least 4 times
        as much over twice the updates).
    n_iter_no_change : int, default=120
        Length, in encoder updates, of the window over which that change is measured. It is
        checked every 10 updates.
    validation_fraction : float, default=0.1
        Fraction of rows held out from training. The critic is trained on the other rows; the
        held-out rows give its honest estimate of dependence (reported in ``history_``), the
        choice among starts, and the calibration that keeps a critic which memorised its rows
        from driving the encoder. With fewer than 10 held-out rows, all rows serve both roles.
    n_init : int, default=4
        Number of starts, trained side by side in one batched game (after 100 critic
        warm-up steps): after 10 updates the two with the lowest held-out objective play
        on, after 30 the better of them alone. Start 0 is PCA's subspace; start ``r``
        keeps PCA's leading directions and replaces the last
        ``ceil(n_components * r / n_init)``: start 1 by the next principal directions, the
        others by random ones around the cut.
        The game is not convex: on the paper's example the start at PCA's subspace ends in a
        worse optimum.
    device : {"auto", "cpu", "cuda", "cuda:N", "mps"}, default="auto"
        Where to train: "auto" uses CUDA when available. Training runs in float32; the fitted
        components are numpy arrays, so ``transform`` runs anywhere.
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
    components_ : ndarray of shape (n_components, n_features)
        The encoder (un-mixing) directions, ordered by decreasing explained variance, each
        with its largest entry positive: ``transform(X) = (X - mean_) @ components_.T``. Not
        orthonormal in general; equal to PCA's when the components are PCA's.
    mixing_ : ndarray of shape (n_features, n_components)
        The decoder: unit-norm columns, the least-squares reconstruction from the components,
        ``inverse_transform(Z) = Z @ mixing_.T + mean_``.
    mean_ : ndarray of shape (n_features,)
        Per-feature mean of the training data.
    explained_variance_ : ndarray of shape (n_components,)
        Variance of each component on the training data: the variance it adds to the
        reconstruction (its decoder column has unit norm and the components are
        uncorrelated, so these add up to the variance reconstructed, as for PCA).
    explained_variance_ratio_ : ndarray of shape (n_components,)
        ``explained_variance_`` divided by the total variance of the training data; the sum
        is the share of variance the reconstruction explains.
    n_components_ : int
        Number of components.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when ``X`` has string column names.
    n_iter_ : int
        Number of encoder updates run; 1 where no game is played (see ``n_components``).
    history_ : list of dict
        One entry per encoder update, for the start that was kept: ``objective``,
        ``reconstruction`` (share of PCA's explained variance given up), ``critic_mse`` and
        ``variance_penalty`` on the training minibatch; every 10 updates also the same four
        on the held-out rows (``val_objective``, ...; ``val_critic_mse`` is the honest
        estimate, 1 for independent components), ``val_change`` and ``val_change_half``, the
        changes over the window and over its last half that ``tol`` is compared with.
        Empty where no game is played.
    device_ : str
        The device training ran on (``"cpu"``, ``"cuda:0"``, ...).

    See Also
    --------
    sklearn.decomposition.PCA : Uncorrelated components of maximal variance.
    sklearn.decomposition.FastICA : Independent components, without a variance criterion.
    NonlinearPICA : The same game with an MLP autoencoder.

    Notes
    -----
    ``transform(X)`` returns ``(X - mean_) @ components_.T``, as
    :class:`~sklearn.decomposition.PCA` does without whitening; ``inverse_transform(Z)``
    returns ``Z @ mixing_.T + mean_`` (for PCA, ``mixing_`` is ``components_.T``). Each
    component is scaled to the standard deviation it explains, so distances between
    transformed rows stay comparable with PCA's. Internally the data are whitened over the
    principal directions whose variance exceeds 1e-6 of the largest; the frame of the
    subspace lives there, and the variance it explains is computed exactly from the
    eigenvalues.

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
    >>> np.abs(pica.components_).argmax(axis=1)  # one component per factor: x1 and x3
    array([0, 2])
    """

    _parameter_constraints: dict = {
        **LinearADMTransformer._parameter_constraints,
        "n_components": _n_components_constraint(),
        "learning_rate": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")],
    }

    def __init__(
        self,
        n_components=None,
        *,
        dependence_weight=0.4,
        reconstruction_weight=1.0,
        critic_steps=4,
        critic_hidden=32,
        probe_hidden=16,
        probes=True,
        max_iter=1000,
        batch_size=512,
        learning_rate="auto",
        critic_learning_rate=2e-2,
        tol=2e-2,
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

    def _game_settings(self, n_train, n_components):
        return self._settings_from_parameters(
            n_train,
            n_components,
            critic_batch_size=self._critic_rows(
                self._batch_rows(n_train), n_components, _CRITIC_BATCH_WORK
            ),
            learning_rate=self._encoder_learning_rate(n_components),
            warmup_steps=WARMUP_STEPS,
            learning_rate_decay=self._decay_horizon(n_train),
        )

    def _game_policies(self):
        from ..game._selection import StartSelection
        from ..game._settings import EVAL_EVERY, GamePolicies
        from ..game._stopping import RepresentationChange

        return GamePolicies(
            stopping=(RepresentationChange(self.tol, self.n_iter_no_change, EVAL_EVERY),),
            selection=StartSelection(window=RANK_WINDOW, narrowing=_NARROWING),
        )

    def _encoder_learning_rate(self, n_components):
        """With "auto", the step grows as the square root of a weight above 1 and of a
        number of components above ``_AUTO_COMPONENTS``: FastICA removes a larger share of
        PCA's dependence as components are added, a game with the same step about the same
        share (design/defaults)."""
        if self.learning_rate != "auto":
            return self.learning_rate
        growth = max(1.0, self.dependence_weight) * max(1.0, n_components / _AUTO_COMPONENTS)
        return _AUTO_LEARNING_RATE * growth**0.5

    def _decay_horizon(self, n_train):
        """More rows let the judges, and the critic, see finer dependence, so the step
        decays over as many passes over the rows (at a given batch size), not as many
        updates, up to ``_MAX_DECAY_GROWTH`` times as many updates; beyond, the stopping rule,
        not the horizon, ends the game (design/defaults)."""
        growth = min(max(1.0, n_train / _DECAY_ROWS), _MAX_DECAY_GROWTH)
        return DECAY_UPDATES * growth

    def _make_autoencoder(self, n_features, n_components, rows):
        from ._pica_encoders import _SubspaceAutoencoders  # torch: only where a fit runs

        return _SubspaceAutoencoders(
            rows, n_components, self.n_init, rotate=self.dependence_weight > 0
        )

    def _store_fitted(self, autoencoder, init, X, mean, scale):
        import torch

        from .._data.scaling import principal_axes

        # in units of the data's magnitude, where no variance over- or underflows; the
        # components are the same in any units. From the moments of all rows, not only the
        # game's training rows: the components are then uncorrelated here and their
        # variances add up to the variance reconstructed.
        data = code_moments(X, autoencoder.unmixing(init), scale)
        eigenvalues, vectors, floor = principal_axes(torch.from_numpy(data.gram))
        # directions of rounding (all of them in constant data) are left as they are; the
        # correction is symmetric, so the subspace stays and its basis moves least
        inverse_root = torch.where(eigenvalues > floor, eigenvalues, 1.0).rsqrt()
        correction = ((vectors * inverse_root) @ vectors.T).numpy()
        unmixing = data.unmixing @ correction
        gram, cross = correction @ data.gram @ correction, data.cross @ correction
        # The best linear decoder of the codes (the regression of the data on them, from
        # their moments); its column norms put each code in the units of the variance it
        # explains.
        decoder = np.linalg.lstsq(gram, cross.T, rcond=None)[0].T  # (n_features, d)
        norms = np.linalg.norm(decoder, axis=0)
        safe = np.where(norms > 0, norms, 1.0)
        components, mixing = (unmixing * norms).T, decoder / safe
        ddof = data.n / max(data.n - 1, 1)  # ddof=1, as PCA's variances
        variance = norms**2 * np.diag(gram) * ddof
        order = np.argsort(-variance, kind="stable")
        components, mixing, variance = components[order], mixing[:, order], variance[order]
        components, mixing = flip_signs(components, mixing)
        total_variance = data.total * ddof
        unit, dtype = data.unit, X.dtype
        self.components_ = components.astype(dtype)
        self.mixing_ = mixing.astype(dtype)
        self.mean_ = (data.mean * unit).astype(dtype)
        self.explained_variance_ = (variance * unit * unit).astype(dtype)  # inf past 1e154
        self.explained_variance_ratio_ = (
            variance / total_variance if total_variance > 0 else variance * 0
        ).astype(dtype)
        # the variance left per remaining direction, as PCA's noise_variance_
        remaining = X.shape[1] - len(variance)
        noise = (total_variance - variance.sum()) / remaining if remaining else 0.0
        with np.errstate(over="ignore"):  # inf past 1e154, as explained_variance_
            self.noise_variance_ = float(max(noise, 0.0) * unit * unit)

    def get_covariance(self):
        """The covariance of the fitted Gaussian model, probabilistic PCA's with PICA's basis.

        ``mixing_ diag(max(explained_variance_ - noise_variance_, 0)) mixing_.T +
        noise_variance_ I``: the data's variance along each component's direction of
        reconstruction, and the variance left spread evenly over the other directions. With
        PCA's basis (``dependence_weight=0``) it is
        :meth:`sklearn.decomposition.PCA.get_covariance`.

        Returns
        -------
        cov : ndarray of shape (n_features, n_features)
        """
        check_is_fitted(self)
        loading = self._loading()
        return loading @ loading.T + self.noise_variance_ * np.eye(len(loading))

    def _loading(self):
        """``W`` of the model's covariance ``W W^T + noise_variance_ I``, in float64."""
        excess = np.maximum(self.explained_variance_.astype(np.float64) - self.noise_variance_, 0)
        return self.mixing_.astype(np.float64) * np.sqrt(excess)

    def score_samples(self, X):
        """Log-likelihood of each sample under the fitted Gaussian model.

        The model is :meth:`get_covariance`'s: a Gaussian, so the likelihood rewards a
        subspace that holds the variance and ignores the independence PICA buys (a
        non-orthogonal basis of the same subspace and variances reads the same); compare it
        with PCA's, which is the largest a model of this form reaches, to see the variance
        PICA gave up.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ll : ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=[np.float64, np.float32], reset=False)
        centred = X.astype(np.float64) - self.mean_
        covariance = self.get_covariance()
        sign, log_determinant = np.linalg.slogdet(covariance)
        if sign <= 0:
            raise ValueError(
                "The fitted model's covariance is singular (the data have fewer directions of "
                "variance than features): its likelihood is not defined."
            )
        solved = np.linalg.solve(covariance, centred.T).T
        n_features = X.shape[1]
        quadratic = (centred * solved).sum(axis=1)
        return -0.5 * (quadratic + n_features * np.log(2 * np.pi) + log_determinant)

    def score(self, X, y=None):
        """Mean log-likelihood of the samples under the fitted Gaussian model
        (:meth:`score_samples`).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : Ignored
            Not used, present for API consistency by convention.

        Returns
        -------
        ll : float
        """
        return float(np.mean(self.score_samples(X)))
