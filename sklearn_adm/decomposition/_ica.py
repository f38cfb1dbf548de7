"""ICA: FastICA's estimator, with its start refined and then turned by the ADM critic
(paper, Sec. 4)."""

import math
import warnings
from dataclasses import replace
from numbers import Integral, Real

import numpy as np
from scipy import linalg
from sklearn.decomposition import FastICA
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval

from .._data.chunked import ChunkedArray, Moments, code_moments
from .._runtime.warnings import raised_at_caller, warn
from ._base import _n_components_constraint, _widths_constraint, pca_count
from ._linear import (
    DECAY_UPDATES,
    RANK_WINDOW,
    WARMUP_STEPS,
    LinearADMTransformer,
    flip_signs,
)

#: FastICA's parameters of ICA, validated as FastICA validates them
_FASTICA_PARAMETERS = ("algorithm", "whiten", "fun", "fun_args", "w_init", "whiten_solver")
#: FastICA's runs from random starts added where its first solution has a Gaussian column
_EXTRA_STARTS = 3
#: rows, at most, of an array read out of core that FastICA's start is fitted on
_START_ROWS = 100_000
#: weight of a rotation's squared distance from its start, against the critic's (1 - MSE)
_ANCHOR_WEIGHT = 2.0


def whitened_rank(X):
    """The directions of ``X`` (an array or a :class:`~sklearn_adm._data.chunked.ChunkedArray`) that
    whitening can make white: those whose variance, an eigenvalue of the covariance, is
    above its rounding (``n_features`` x machine epsilon x the largest), at least 1.

    FastICA whitens as many directions as it is asked, the ones of no variance too: their
    rounding noise is scaled up to unit variance, and the components built on them are noise
    whose ``mixing_`` reconstructs nothing (``FastICA()`` on scikit-learn's digits, whose 64
    pixels have rank 61: reconstruction errors up to 15.6 on pixels of 0 to 16)."""
    moments = X.moments if isinstance(X, ChunkedArray) else Moments.of(X)
    variances = np.linalg.eigvalsh(moments.covariance())  # in the data's unit: no underflow
    floor = X.shape[1] * np.finfo(np.float64).eps * variances[-1]
    return max(1, int((variances > floor).sum()))


def fastica_whitener(X, n_components, solver):
    """FastICA's whitening of the rows ``X`` ``(n, n_features)``: the map ``(n_features,
    n_components)`` onto their leading principal directions, each scaled to unit variance
    (Hyvarinen et al. 2001, Eq. 6.33), by FastICA's ``solver`` ("svd" or "eigh", which warns
    as FastICA does where an eigenvalue is numerically zero) and with its signs: each
    direction's first entry is positive.

    Where that entry is exactly 0, as it is for every principal direction of data whose first
    feature is constant (the corner pixel of every image in scikit-learn's digits),
    scikit-learn's FastICA multiplies the direction by ``sign(0) = 0`` and loses it: on the
    digits, two of 16 components' whitening directions were zero, so its components spanned
    another subspace than PCA's and explained less of the variance (held-out 0.72 of the
    variance against PCA's 0.84). Here such a direction keeps its sign."""
    centred = X - X.mean(axis=0)
    if solver == "eigh":
        eigenvalues, vectors = linalg.eigh(centred.T @ centred)
        order = np.argsort(eigenvalues)[::-1]
        floor = 10 * np.finfo(eigenvalues.dtype).eps
        if (eigenvalues < floor).any():
            warn(
                "There are some small singular values, using whiten_solver = 'svd' might "
                "lead to more accurate results.",
                UserWarning,
            )
        singular_values = np.sqrt(np.maximum(eigenvalues, floor))[order]
        vectors = vectors[:, order]
    else:
        # the centred copy is this function's own: LAPACK may overwrite it (the same
        # numbers, without the copy scipy would make; 300 MB at 100,000 x 384)
        vectors, singular_values = linalg.svd(centred.T, full_matrices=False, overwrite_a=True)[:2]
    signs = np.where(vectors[0] < 0, -1.0, 1.0)
    return (vectors * signs / singular_values)[:, :n_components] * math.sqrt(len(X))


class ICA(LinearADMTransformer):
    r"""Independent component analysis by adversarial dependence minimisation.

    A drop-in for :class:`sklearn.decomposition.FastICA`: it takes FastICA's whole
    constructor with FastICA's meaning, and has its fitted attributes. The fit starts where
    FastICA ends (the same whitening, contrast ``fun``, scheme ``algorithm`` and start
    ``w_init``), refines that rotation for densities a fixed contrast misses, and then lets an
    ADM critic (paper, Algorithm 1) look for dependence left between the components on rows
    it never trained on: where it finds none beyond noise, the fit stops there (``n_iter_ ==
    0``); where it finds some, the game turns the rotation against it. A game can fool its
    own critic, so its rotation is kept only where a critic that did not play finds the
    components less dependent on those rows than in the start (checked by ``fit`` at the
    first held-out evaluation, where a game that fails stops, and at the end).

    The refinement turns the rotation, one plane at a time, to the least summed m-spacing
    entropy of the components (Vasicek's estimate, as in Learned-Miller & Fisher's
    RADICAL), where that search sees every row (up to 24,000 rows for up to 8 sources,
    fewer for more), then takes a few Newton steps of maximum likelihood under each
    component's score, fitted by score matching in a small basis (tanh and Gaussian bumps).
    It separates sources whose non-Gaussianity log cosh does not see (multimodal, skewed);
    see the user guide for the benchmark against FastICA and Picard. Data that are not such
    a mixture, such as sentence embeddings, have no rotation that makes the components
    independent: use :class:`PICA`.

    Parameters
    ----------
    n_components : int, float, "mle" or None, default=None
        Number of components. None: ``min(n_samples, n_features)``; more is cut to that,
        with a warning. Either is cut to the rank of the centred data where that is lower
        (its directions of variance; with a warning where the number was given): FastICA
        whitens directions of no variance too, and builds components of their rounding. A
        float in (0, 1): the fewest principal directions explaining more than that share of
        the variance; ``"mle"``: Minka's choice, as :class:`~sklearn.decomposition.PCA`
        resolves them (``n_components_`` holds the number). Ignored, with a warning, when
        ``whiten=False``.
    algorithm : {"parallel", "deflation"}, default="parallel"
        FastICA's scheme for the start: all components at once, or one at a time.
    whiten : {"unit-variance", "arbitrary-variance"} or False, default="unit-variance"
        As FastICA's: ``"unit-variance"`` centres and whitens the data and scales each
        component to unit variance; ``"arbitrary-variance"`` leaves the components the
        variance of FastICA's (``1 / n_samples`` each); False takes data that are already
        white (identity covariance), neither centres them nor reduces them, and
        ``components_`` is then the rotation itself.
    fun : {"logcosh", "exp", "cube"} or callable, default="logcosh"
        FastICA's contrast for the start (a callable returns the derivative and the mean of
        the second derivative, as FastICA's).
    fun_args : dict, default=None
        Arguments of ``fun`` (``{"alpha": 1.0}`` for "logcosh").
    max_iter : int, default=200
        Iterations of the start's fixed point, and updates of the rotation in the game, at
        most each.
    tol : float, default=1e-4
        Tolerance of the start's fixed point; the game stops when its held-out objective has
        not fallen by ``tol`` over ``n_iter_no_change`` updates.
    w_init : array-like of shape (n_components, n_components), default=None
        The start's initial un-mixing of the whitened data, as FastICA's; None draws it from
        ``random_state``.
    whiten_solver : {"svd", "eigh"}, default="svd"
        FastICA's solver of the whitening.
    random_state : int, RandomState instance or None, default=None
        Seeds the start, the split and the critic. An int gives the same result to the bit
        on one machine (its CPU, its libraries) and one number of threads
        (``training_threads`` pins them); another CPU rounds in other places, and a long
        game can carry that into another solution of the same quality (the user guide's
        "Results on other CPUs").
    critic_steps : int, default=1
        Critic updates per update of the rotation.
    critic_hidden : int or tuple of int, default=32
        Hidden widths of each dependency predictor.
    probe_hidden : int or tuple of int, default=16
        Hidden widths of each probe network.
    probes : bool, default=True
        If False, only dependence of the conditional mean is sought.
    batch_size : int or None, default=256
        Rows per update; None uses all training rows.
    learning_rate : float, default=2e-2
        Step size of the rotation's optimizer (Adam on its skew generator), decayed as
        ``learning_rate / (1 + t / 25)``.
    critic_learning_rate : float, default=2e-2
        Step size of the critic's Adam optimizer.
    n_iter_no_change : int, default=50
        See ``tol``.
    validation_fraction : float, default=0.2
        Share of the rows held out from the critic's training: they decide whether there is
        dependence to remove, rank the critics and decide when to stop. The start uses all
        rows.
    n_init : int, default=4
        Critics played side by side, each turning its own copy of the start; the rotation
        of the best on the held-out rows is kept.
    device : str, default="auto"
        ``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"mps"``.
    verbose : int, default=0
        Above 0, a progress bar.

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        The un-mixing matrix: ``transform(X) == (X - mean_) @ components_.T`` (``X @
        components_.T`` when ``whiten=False``).
    mixing_ : ndarray of shape (n_features, n_components)
        The pseudo-inverse of ``components_``: ``inverse_transform(S) == S @ mixing_.T +
        mean_`` (without ``mean_`` when ``whiten=False``).
    mean_ : ndarray of shape (n_features,)
        The mean of the training data. Only set when ``whiten`` is not False.
    whitening_ : ndarray of shape (n_components, n_features)
        The whitening: ``(X - mean_) @ whitening_.T`` has identity covariance on the
        training rows, and ``components_`` is a rotation of it. Only set when ``whiten`` is
        not False.
    n_components_ : int
        Number of components.
    n_iter_ : int
        Updates of the rotation in the game; 0 where the held-out critic found no
        dependence to remove in the start.
    history_ : list of dict
        Per update: the critic's MSE (and, every 10 updates, on held-out rows, with
        ``"independent"``: whether that held-out estimate was within the noise of
        independence). When ``n_iter_ == 0``, one entry, before any update. Where the
        game played, its last entry says whether a critic that did not play confirmed
        its result (``"confirmed"``, with that critic's held-out errors on the start and
        on the result, ``"fresh_critic_mse_start"`` and ``"fresh_critic_mse"``); where it
        did not, the start is kept.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when ``X`` has string column names.

    See Also
    --------
    sklearn.decomposition.FastICA : ICA with a fixed contrast, ICA's start.
    PICA : fewer components than features, chosen for variance and independence.

    Notes
    -----
    ``fun``, ``fun_args``, ``algorithm``, ``w_init``, ``max_iter`` and ``tol`` reach FastICA
    unchanged, which validates them (a ``w_init`` of the wrong shape, a ``fun`` that does
    not return a pair, an ``alpha`` outside [1, 2] raise FastICA's ``ValueError``) and warns
    as FastICA does (a ``ConvergenceWarning`` from the start reads "FastICA did not
    converge"). The whitening is FastICA's (its ``whiten_solver``, scale and signs), with one
    difference: where the data's first feature is constant, as the corner pixel of every
    image in scikit-learn's digits, scikit-learn's FastICA zeroes some of its principal
    directions (it fixes their signs by the sign of their first entry, which is then 0) and
    its components leave PCA's subspace; ICA's keep every direction. The refinement and the
    game then change the rotation only. The components' signs are fixed: each component's
    largest coefficient is positive.

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
        **{name: FastICA._parameter_constraints[name] for name in _FASTICA_PARAMETERS},
        "n_components": _n_components_constraint(),
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state"],
        "critic_steps": [Interval(Integral, 1, None, closed="left")],
        "critic_hidden": _widths_constraint(),
        "probe_hidden": _widths_constraint(),
        "probes": ["boolean"],
        "batch_size": [Interval(Integral, 2, None, closed="left"), None],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "critic_learning_rate": [Interval(Real, 0, None, closed="neither")],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "validation_fraction": [Interval(Real, 0, 1, closed="left")],
        "n_init": [Interval(Integral, 1, None, closed="left")],
        "device": [str],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        n_components=None,
        *,
        algorithm="parallel",
        whiten="unit-variance",
        fun="logcosh",
        fun_args=None,
        max_iter=200,
        tol=1e-4,
        w_init=None,
        whiten_solver="svd",
        random_state=None,
        critic_steps=1,
        critic_hidden=32,
        probe_hidden=16,
        probes=True,
        batch_size=256,
        learning_rate=2e-2,
        critic_learning_rate=2e-2,
        n_iter_no_change=50,
        validation_fraction=0.2,
        n_init=4,
        device="auto",
        verbose=0,
    ):
        self.n_components = n_components
        self.algorithm = algorithm
        self.whiten = whiten
        self.fun = fun
        self.fun_args = fun_args
        self.max_iter = max_iter
        self.tol = tol
        self.w_init = w_init
        self.whiten_solver = whiten_solver
        self.random_state = random_state
        self.critic_steps = critic_steps
        self.critic_hidden = critic_hidden
        self.probe_hidden = probe_hidden
        self.probes = probes
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.critic_learning_rate = critic_learning_rate
        self.n_iter_no_change = n_iter_no_change
        self.validation_fraction = validation_fraction
        self.n_init = n_init
        self.device = device
        self.verbose = verbose

    _start_from_all_rows = True  # FastICA's start sees every row, as FastICA would

    def _resolve_n_components(self, X):
        """FastICA's rule, with FastICA's warnings; a share of variance or ``"mle"`` as PCA
        resolves them; and, where whitening, at most the rank of the centred data
        (:func:`whitened_rank`)."""
        n_samples, n_features = X.shape
        if not self.whiten:
            if self.n_components is not None:
                warn("Ignoring n_components with whiten=False.", UserWarning)
            return n_features
        largest = min(n_samples, n_features)
        if isinstance(self.n_components, str | float):
            return pca_count(X, self.n_components)
        count = largest if self.n_components is None else self.n_components
        if count > largest:
            warn(f"n_components is too large: it will be set to {largest}", UserWarning)
            count = largest
        rank = whitened_rank(X)
        if count > rank:
            if self.n_components is not None:
                warn(
                    f"n_components={count} is above the rank of the centred data, {rank}: "
                    f"it will be set to {rank}.",
                    UserWarning,
                )
            count = rank
        return count

    def _start_size(self, n_rows, n_components):
        """Elements of the start's largest tensor: the entropy search sorts grids of angles
        for every plane at once (1.15 million values on 1,000 rows of two sources)."""
        from .._numerics.spacings import grid_size

        return grid_size(n_rows, n_components)

    def _make_autoencoder(self, n_features, n_components, rows):
        """FastICA's fit of the scaled ``rows`` (all of them; of an array read out of core,
        ``_START_ROWS`` at random), its rotation refined, as the start of every copy.

        Where a column of FastICA's solution looks Gaussian and ``w_init`` is None, the fixed
        point may have stopped at a saddle of the contrast (nearly Gaussian sources): it
        is run again from ``_EXTRA_STARTS`` more random starts, and the solution of the most
        non-Gaussian columns (the greatest summed fitted Fisher information) is kept.
        """
        import torch  # only where a fit runs

        from .._numerics.score_matching import fisher_information, gaussian_looking
        from ._ica_start import _RotationEncoders, refined_start

        X_start = rows.in_memory(_START_ROWS)
        dtype, device = X_start.dtype, X_start.device
        X = X_start.double().cpu().numpy()
        del X_start  # the float64 copy is the one FastICA reads
        whitener, white, rotation = self._fastica(X, n_components)
        if self.w_init is None and gaussian_looking(white @ rotation).any():
            # the data are white now: the extra starts need no whitening of their own; they
            # are ICA's own tries, whose fixed points need not converge (FastICA's start warns)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                candidates = [rotation] + [
                    self._fastica(white.numpy(), None, whiten=False)[2]
                    for _ in range(_EXTRA_STARTS)
                ]
            information = [float(fisher_information(white @ r).sum()) for r in candidates]
            rotation = candidates[int(np.argmax(information))]
        start = refined_start(white, rotation)
        whitener = torch.as_tensor(whitener, dtype=dtype, device=device)
        return _RotationEncoders(whitener, start.to(whitener), self.n_init)

    def _fastica(self, X, n_components, whiten=None):
        """FastICA, with this estimator's FastICA parameters (``whiten`` overrides its own)
        and a seed drawn from torch's generator (seeded by the estimator), on ``X``
        ``(n, n_features)``: the whitener (to rows of identity covariance), the white rows
        and FastICA's rotation of them.

        The whitening is FastICA's (:func:`fastica_whitener`), computed here so that a
        constant first feature does not lose directions; FastICA's fixed point then runs on
        the white rows as FastICA runs it after its own whitening (the same start ``w_init``
        or the same random draw, so the same rotation wherever FastICA's whitening holds)."""
        import torch

        whiten = self.whiten if whiten is None else whiten
        seed = int(torch.randint(np.iinfo(np.int32).max, ()))
        parameters = {
            name: getattr(self, name) for name in ("algorithm", "fun", "fun_args", "w_init")
        }
        if whiten:
            whitener = fastica_whitener(X, n_components, self.whiten_solver)
            white = (X - X.mean(axis=0)) @ whitener
        else:
            whitener, white = np.eye(X.shape[1]), X
        fastica = FastICA(
            whiten=False,
            **parameters,
            max_iter=self.max_iter,
            tol=self.tol,
            random_state=seed,
        )
        with raised_at_caller():  # FastICA's warnings name the user's line
            fastica.fit(white)
        # the nearest rotation, by SVD: robust to the singular directions of low-rank data
        left, _, right = np.linalg.svd(fastica.components_.T)
        return whitener, torch.as_tensor(white), torch.as_tensor(left @ right)

    def _game_settings(self, n_train, n_components):
        return self._settings_from_parameters(
            n_train,
            n_components,
            dependence_weight=1.0,
            reconstruction_weight=_ANCHOR_WEIGHT,
            variance_weight=0.0,
            warmup_steps=WARMUP_STEPS,
            learning_rate_decay=DECAY_UPDATES,
        )

    def _game_policies(self):
        """All starts play to the end (cutting the critic down to the leader and capturing
        its step again failed on CUDA for this encoder: a stream-capture error); a critic
        that did not play must confirm the result."""
        from ..game._confirmation import FreshCriticConfirmation
        from ..game._selection import StartSelection
        from ..game._settings import GamePolicies
        from ..game._stopping import IndependenceReached, ObjectivePlateau

        return GamePolicies(
            stopping=(ObjectivePlateau(self.tol, self.n_iter_no_change), IndependenceReached()),
            selection=StartSelection(window=RANK_WINDOW),
            confirmation=FreshCriticConfirmation(),
        )

    def _store_fitted(self, autoencoder, init, X, mean, scale):
        unmixing = autoencoder.unmixing(init)  # (n_features, d), on the scaled inputs
        if self.whiten:
            data = code_moments(X, unmixing, scale)  # codes of the centred data, all rows
            self.mean_ = (data.mean * data.unit).astype(X.dtype)
            # white on every row: where the whitener was estimated on fewer rows (the first
            # batch of a stream), the symmetric correction that moves the basis least
            eigenvalues, vectors = np.linalg.eigh(data.gram)
            floor = np.finfo(np.float64).eps * max(eigenvalues.max(), np.finfo(float).tiny)
            inverse_root = np.where(eigenvalues > floor, eigenvalues, 1.0) ** -0.5
            correction = (vectors * inverse_root) @ vectors.T
            unmixing = data.unmixing @ correction / data.unit  # on the centred data, its units
            data = replace(data, gram=correction @ data.gram @ correction)
            self.whitening_ = (
                autoencoder.whitener.double().numpy() / np.reshape(scale, (-1, 1))
            ).T.astype(X.dtype)
            if self.whiten == "unit-variance":
                spread = np.sqrt(np.diag(data.gram))
                unmixing = unmixing / np.where(spread > 0, spread, 1.0)
            else:  # FastICA's arbitrary variance: 1 / n_samples per component
                unmixing = unmixing / math.sqrt(data.n)
        components, mixing = flip_signs(unmixing.T, np.linalg.pinv(unmixing.T))
        self.components_ = components.astype(X.dtype)
        self.mixing_ = mixing.astype(X.dtype)

    @property
    def _centres_data(self):
        return bool(self.whiten)
