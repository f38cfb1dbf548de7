"""ICA: independent components of whitened data, turned by the ADM critic (paper, Sec. 4)."""

from numbers import Integral, Real

import numpy as np
import torch
from sklearn.utils._param_validation import Interval, StrOptions
from torch import nn

from ._base import BaseADMTransformer, _widths_constraint
from ._game import Autoencoders, GameSettings
from ._rotation import negentropy, negentropy_rotation, polar, retract
from ._scaling import principal_axes
from ._score_matching import likelihood_rotation
from ._spacings import entropy_rotation

#: random starts of FastICA's contrast, whose best the entropy search refines; plain
#: fixed-point steps from each, keeping the best, then ascent steps
_CONTRAST_STARTS, _EXPLORE_STEPS, _ASCENT_STEPS = 4, 20, 100
#: Jacobi sweeps of the entropy search (more than two columns)
_START_SWEEPS = 2
#: quasi-Newton steps of maximum likelihood under fitted scores, from the entropy search
_LIKELIHOOD_STEPS = 5
#: weight of a rotation's squared distance from its start, against the critic's (1 - MSE)
_ANCHOR_WEIGHT = 2.0


class _RotationEncoders(Autoencoders):
    """``n_init`` rotations of the whitened data, side by side.

    The data are whitened once (``prepare``), so every rotation ``R`` gives white codes
    ``z = x~ R`` and loses nothing: the reconstruction is perfect and only the critic moves
    ``R``. A rotation is ``R = base expm(S - S^T)``; the game's optimizer moves the skew
    generator ``S``, which ``after_update`` folds into ``base`` (so ``S`` stays 0 between
    updates and ``R`` orthonormal to rounding).

    Every start begins at the same rotation, built from all rows: the best maximum of
    FastICA's log-cosh contrast from a few random rotations, then turned, one plane at a
    time, to the least summed m-spacing entropy of the columns (:mod:`._spacings`), a
    contrast that adapts to the sources' densities where log cosh misses some (multimodal,
    skewed), then by a few Newton steps of maximum likelihood under each column's score
    fitted by score matching (:mod:`._score_matching`), which turn all planes at once
    where the sweeps leave many columns short of the optimum. The starts differ in their
    critics; the game then turns each rotation against its critic, and the held-out rows
    pick the best.
    """

    def __init__(self, X_rows, n_components, n_init):
        super().__init__()
        self.n_init = n_init
        X = X_rows.double()
        eigenvalues, vectors, floor = principal_axes(X)
        whitener = vectors[:, :n_components] * eigenvalues[:n_components].clamp_min(floor).rsqrt()
        self.register_buffer("whitener", whitener.to(X_rows.dtype))
        white = X @ whitener
        # drawn on the CPU, so that a seed gives the same starts on every device
        shape = (_CONTRAST_STARTS, n_components, n_components)
        starts = polar(torch.randn(shape, dtype=X.dtype)).to(X.device)
        starts = negentropy_rotation(
            white.expand(len(starts), -1, -1),
            starts,
            explore=_EXPLORE_STEPS,
            max_iter=_ASCENT_STEPS,
        )
        contrast_maximum = starts[negentropy(white, starts).argmax()]
        start = entropy_rotation(white, contrast_maximum, sweeps=_START_SWEEPS)
        start = likelihood_rotation(white, start, steps=_LIKELIHOOD_STEPS)
        base = start.expand(n_init, -1, -1).to(X_rows.dtype)
        self.register_buffer("base", base.clone())
        self.register_buffer("start", self.base.clone())
        self.skew = nn.Parameter(torch.zeros_like(self.base))

    def prepare(self, x):
        return x @ self.whitener

    def rotations(self):
        return self.base @ torch.linalg.matrix_exp(self.skew - self.skew.transpose(-1, -2))

    def encode(self, x):
        return torch.einsum("nk,rkd->nrd", x, self.rotations()).flatten(start_dim=1)

    def reconstruction_error(self, x, z):
        """The squared distance of each rotation from its start, per component: nothing is
        lost by rotating white data, and this term keeps a rotation where its start was
        wherever the critic finds no dependence to remove (nearly Gaussian sources)."""
        gap = self.rotations() - self.start
        return gap.square().sum(dim=(1, 2)) / (2 * gap.shape[-1])

    def after_update(self):
        with torch.no_grad():  # orthonormal to rounding: Newton-Schulz, no solver, no sync
            self.base.copy_(retract(self.rotations()))
            self.skew.zero_()

    def finish(self):
        """Fold the averaged encoder's generator in; an average of nearby rotations is
        nearly orthonormal, and ``retract`` makes it so."""
        self.after_update()

    def unmixing(self, start):
        """The trained un-mixing of one start on the scaled inputs, ``(n_features, d)``."""
        with torch.no_grad():
            rotation = polar(self.rotations()[start].double())
            return (self.whitener.double() @ rotation).numpy()


class ICA(BaseADMTransformer):
    r"""Independent component analysis by adversarial dependence minimisation.

    A drop-in for :class:`sklearn.decomposition.FastICA` (with ``whiten="unit-variance"``):
    the data are centred and whitened, and the un-mixing is a rotation of the whitened data.
    Where FastICA climbs a fixed contrast (log cosh), this rotation starts from a contrast
    that adapts to the sources' densities and is then trained against an ADM critic that
    *learns* the dependence left between the components (paper, Algorithm 1), so it
    separates sources whose non-Gaussianity a fixed contrast does not see (multimodal,
    skewed). The start is FastICA's best solution from a few random rotations, turned one
    plane at a time to the least summed m-spacing entropy of the components (Vasicek's
    estimate, as in Learned-Miller & Fisher's RADICAL) on a smoothing of the data, then
    refined by a few Newton steps of maximum likelihood under each component's score,
    fitted by score matching in a small basis (tanh and Gaussian bumps). A penalty on the
    distance from the start keeps a rotation there where the critic finds no dependence to
    remove. The game, its held-out rows, its averaged encoder and its stopping rule are those
    of :class:`PICA`; the whitening and the start use all rows, the critic only the training
    rows.

    On Bach & Jordan's 18 source densities (``benchmarks/bench_ica.py``, 10 draws each) its
    mean Amari error was 0.36 of the better of FastICA and Picard with two sources and 1,000
    rows, 0.30 with four and 0.28 with eight (0.47 and 0.55 when each source's density is
    drawn at random); at these sizes the critic's game changed the start's error by less than
    the noise between draws. It costs far more than FastICA (0.7 s for two sources and 1,000
    rows on a 2-core CPU, 6 s for eight and 4,000 rows, against milliseconds): pick it when
    the sources' densities are unknown, multimodal or skewed, where a fixed contrast fails.
    Data that are not such a mixture, such as sentence embeddings, have no rotation that
    makes the components independent: there the critic keeps turning it until ``max_iter``
    (a ConvergenceWarning), and gradient-boosted trees read the components of 8 to 32 of
    them 1.0 to 1.3 times as dependent as FastICA's. For such data use :class:`PICA`.

    Parameters
    ----------
    n_components : int, default=None
        Number of components. None: ``n_features``.
    whiten : {"unit-variance"}, default="unit-variance"
        The components have unit variance, as FastICA's with this option.
    critic_steps : int, default=1
        Critic updates per update of the rotation.
    critic_hidden : int or tuple of int, default=32
        Hidden widths of each dependency predictor.
    probe_hidden : int or tuple of int, default=16
        Hidden widths of each probe network.
    probes : bool, default=True
        If False, only dependence of the conditional mean is removed.
    max_iter : int, default=300
        Updates of the rotation, at most.
    batch_size : int or None, default=256
        Rows per update; None uses all training rows.
    learning_rate : float, default=2e-2
        Step size of the rotation's optimizer (Adam on its skew generator), decayed as
        ``learning_rate / (1 + t / 25)``.
    critic_learning_rate : float, default=2e-2
        Step size of the critic's Adam optimizer.
    tol : float, default=1e-4
        Training stops when the components changed by less than ``tol`` (relative to their
        variance) over ``n_iter_no_change`` updates.
    n_iter_no_change : int, default=50
        See ``tol``.
    validation_fraction : float, default=0.2
        Share of the rows held out: the critic never trains on them; they calibrate it,
        rank the starts and decide when to stop.
    n_init : int, default=4
        Critics played side by side, each turning its own copy of the start; the rotation
        of the best on the held-out rows is kept.
    device : str, default="auto"
        ``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"mps"``.
    random_state : int, RandomState instance or None, default=None
        Seeds the starts, the split and the critic.
    verbose : int, default=0
        Above 0, a progress bar.

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        The un-mixing matrix: ``transform(X) == (X - mean_) @ components_.T``.
    mixing_ : ndarray of shape (n_features, n_components)
        The pseudo-inverse of ``components_``: ``inverse_transform(S) == S @ mixing_.T +
        mean_``.
    mean_ : ndarray of shape (n_features,)
        The mean of the training data.
    whitening_ : ndarray of shape (n_components, n_features)
        The whitening: ``(X - mean_) @ whitening_.T`` has identity covariance on the
        rows it was fitted on, and ``components_`` is a rotation of it.
    n_components_ : int
        Number of components.
    n_iter_ : int
        Updates of the rotation that ran.
    history_ : list of dict
        Per update: the critic's MSE (and, every 10 updates, on held-out rows).
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when ``X`` has string column names.

    See Also
    --------
    sklearn.decomposition.FastICA : ICA with a fixed contrast, far faster.
    PICA : fewer components than features, chosen for variance and independence.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_adm import ICA
    >>> rng = np.random.default_rng(0)
    >>> sources = np.c_[rng.uniform(-1, 1, 2000), rng.laplace(size=2000)]
    >>> X = sources @ np.array([[1.0, 0.5], [0.5, 1.0]]).T
    >>> ica = ICA(random_state=0).fit(X)
    >>> estimated = ica.transform(X)
    >>> correlation = np.corrcoef(sources.T, estimated.T)[:2, 2:]
    >>> bool((np.abs(correlation).max(axis=1) > 0.99).all())
    True
    """

    _parameter_constraints: dict = {
        "n_components": [Interval(Integral, 1, None, closed="left"), None],
        "whiten": [StrOptions({"unit-variance"})],
        "critic_steps": [Interval(Integral, 1, None, closed="left")],
        "critic_hidden": _widths_constraint(),
        "probe_hidden": _widths_constraint(),
        "probes": ["boolean"],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "batch_size": [Interval(Integral, 2, None, closed="left"), None],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "critic_learning_rate": [Interval(Real, 0, None, closed="neither")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "validation_fraction": [Interval(Real, 0, 1, closed="left")],
        "n_init": [Interval(Integral, 1, None, closed="left")],
        "device": [str],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        n_components=None,
        *,
        whiten="unit-variance",
        critic_steps=1,
        critic_hidden=32,
        probe_hidden=16,
        probes=True,
        max_iter=300,
        batch_size=256,
        learning_rate=2e-2,
        critic_learning_rate=2e-2,
        tol=1e-4,
        n_iter_no_change=50,
        validation_fraction=0.2,
        n_init=4,
        device="auto",
        random_state=None,
        verbose=0,
    ):
        self.n_components = n_components
        self.whiten = whiten
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

    # All starts play to the end: cutting the critic down to the leader and capturing its
    # step again was measured to fail on CUDA for this encoder (a stream-capture error).
    _narrow_after = None
    _rank_window = 3
    _learning_rate_decay = 25
    _warmup_steps = 100
    _start_from_all_rows = True

    def _make_autoencoder(self, n_features, n_components, X_train):
        return _RotationEncoders(X_train, n_components, self.n_init)

    def _game_settings(self, n_train, n_components):
        return GameSettings(
            dependence_weight=1.0,
            reconstruction_weight=_ANCHOR_WEIGHT,
            variance_weight=0.0,
            **self._shared_game_settings(n_train, n_components),
        )

    def _store_fitted(self, autoencoder, init, X, mean, scale):
        X64 = X.astype(np.float64, copy=False)
        self.mean_ = X64.mean(axis=0)
        scale = np.reshape(scale, (-1, 1))  # one scale, or one per feature
        unmixing = autoencoder.unmixing(init) / scale  # (n_features, d)
        # unit variance over all rows, as FastICA's "unit-variance"; deterministic signs
        spread = ((X64 - self.mean_) @ unmixing).std(axis=0)
        unmixing = unmixing / np.where(spread > 0, spread, 1.0)
        largest = np.argmax(np.abs(unmixing), axis=0)
        unmixing = unmixing * np.sign(unmixing[largest, np.arange(unmixing.shape[1])])
        dtype = X.dtype
        self.whitening_ = (autoencoder.whitener.double().numpy() / scale).T.astype(dtype)
        self.components_ = unmixing.T.astype(dtype)
        self.mixing_ = np.linalg.pinv(unmixing.T).astype(dtype)
        self.mean_ = self.mean_.astype(dtype)

    def _transform(self, X):
        return (X - self.mean_) @ self.components_.T

    def _inverse_transform(self, Z):
        return Z @ self.mixing_.T + self.mean_
