"""What PICA and NonlinearPICA share: parameters, validation, seeding, the call to the game."""

import copy
from abc import ABCMeta, abstractmethod
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
    _fit_context,
)
from sklearn.decomposition import PCA
from sklearn.decomposition._pca import _infer_dimension
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, RealNotInt, StrOptions
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from .._data.chunked import ChunkedArray, Moments, check_chunked, is_chunked
from .._data.rows import MIN_VALIDATION_ROWS, distinct_records, scaled_rows, split_rows
from .._data.scaling import fit_scaling, scaling_from_moments

#: the fewest rows of a critic's minibatch
_MIN_CRITIC_ROWS = 128


def _n_components_constraint():
    """A count, a share of variance in (0, 1), or ``"mle"``, as PCA takes them."""
    return [
        Interval(Integral, 1, None, closed="left"),
        Interval(RealNotInt, 0, 1, closed="neither"),
        StrOptions({"mle"}),
        None,
    ]


def pca_count(X, n_components):
    """The number of components that scikit-learn's PCA keeps for ``n_components`` a share of
    variance in (0, 1) (the fewest principal directions that explain more) or ``"mle"`` (Minka's
    choice of dimension); of a :class:`~sklearn_adm._data.chunked.ChunkedArray`, by PCA's rules from
    the eigenvalues of its covariance."""
    if not isinstance(X, ChunkedArray):
        return int(PCA(n_components, svd_solver="full").fit(X).n_components_)
    spectrum = X.moments.spectrum
    if n_components == "mle":
        return int(_infer_dimension(spectrum, len(X)))
    share = np.cumsum(spectrum) / max(spectrum.sum(), np.finfo(float).tiny)
    return min(int(np.searchsorted(share, n_components, side="right")) + 1, len(spectrum))


@dataclass(frozen=True)
class _TrainingData:
    """What the game is played on: training rows (``TensorRows`` or ``StreamedRows``), the
    held-out rows (a tensor), the rows the start is built from, and the scaling."""

    train: object
    val: object
    start: object
    mean: np.ndarray
    scale: np.ndarray | float


@dataclass
class _Stream:
    """The state ``partial_fit`` keeps between batches: what the first batch fixed (the
    game's settings, the scaling, the held-out rows) and the game going on."""

    settings: object
    mean: np.ndarray
    scale: np.ndarray | float
    device: str
    autoencoder: object = None
    val: object = None
    game: object = None
    moments: object = None
    #: seeds what the autoencoder draws when it absorbs a batch (the fit's seed, plus the
    #: batches absorbed): a stream gives the same model every time, and leaves torch's
    #: global generator alone
    seed: int = 0
    batches: int = 0

    def scaled(self, rows):
        """``rows`` scaled as the first batch was, a float32 tensor on the device."""
        return scaled_rows(rows, np.arange(len(rows)), self.mean, self.scale, self.device)


def _widths_constraint():
    return [Interval(Integral, 1, None, closed="left"), tuple]


class BaseADMTransformer(
    ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator, metaclass=ABCMeta
):
    """Base class of the ADM autoencoders. Do not use directly.

    A subclass builds its autoencoder (``_make_autoencoder``), chooses the game's numbers and
    policies (``_game_settings``, ``_game_policies``, side by side) and stores its fitted state
    (``_store_fitted``); everything else, from input validation to the training game, lives
    here once.
    """

    _parameter_constraints: dict = {
        "n_components": [Interval(Integral, 1, None, closed="left"), None],
        "dependence_weight": [Interval(Real, 0, None, closed="left")],
        "reconstruction_weight": [Interval(Real, 0, None, closed="neither")],
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

    #: scale each feature to unit variance (else one scale for all, keeping the geometry)
    _per_feature_scaling = False
    #: build the start from all rows, not only the training rows (the critic, which must not
    #: see the held-out rows, still trains on the training rows alone)
    _start_from_all_rows = False

    @abstractmethod
    def _make_autoencoder(self, n_features, n_components, rows):
        """Return the module the game trains: ``n_init`` restarts side by side, built from the
        scaled training ``rows`` (all rows where ``_start_from_all_rows``), a
        :class:`~sklearn_adm._data.streaming.TensorRows` or
        :class:`~sklearn_adm._data.streaming.StreamedRows`: their ``covariance()``, a
        ``sample(n_rows)`` of them.

        It has an ``n_init`` attribute, ``encode(x)`` returning the ``(n, n_init * n_components)``
        representations of all restarts, and ``reconstruction_error(x, z)`` returning each
        restart's mean squared error per entry, shape ``(n_init,)``.
        """

    @abstractmethod
    def _store_fitted(self, autoencoder, init, X, mean, scale):
        """Turn restart ``init`` of the trained autoencoder into fitted attributes; ``X`` is
        the validated input (an array, or a :class:`~sklearn_adm._data.chunked.ChunkedArray`)."""

    @abstractmethod
    def _transform(self, X):
        """Encode validated ``X``."""

    @abstractmethod
    def _inverse_transform(self, Z):
        """Decode validated ``Z``."""

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit the model to ``X`` by playing the ADM game.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data. In continuous data, a row that repeats exactly is one record
            gathered twice, and the game learns from it once (see the user guide's limits).
            A memory-mapped array or a Dask array is read out of core, a block at a time
            (see the user guide's "Data beyond memory").
        y : Ignored
            Not used, present for API consistency by convention.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        self._fit(X)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def fit_transform(self, X, y=None):
        """Fit the model to ``X`` and return its components.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data. In continuous data, a row that repeats exactly is one record
            gathered twice, and the game learns from it once (see the user guide's limits).
            A memory-mapped array or a Dask array is read out of core, a block at a time
            (see the user guide's "Data beyond memory").
        y : Ignored
            Not used, present for API consistency by convention.

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_components)
            The representation of ``X``: a lazy Dask array for a Dask array.
        """
        return self._blockwise("_transform", self._fit(X), self.n_components_)

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y=None):
        """Go on with the game on one more batch of rows, for data that arrive as a stream.

        The first call opens the game on its batch, which fixes what a fit takes from all
        rows: the held-out rows (a share ``validation_fraction`` of this batch), the scaling,
        the number of components, the start (built from this batch as ``fit`` builds it) and
        the step's schedule. Each call then plays one pass of minibatches over its batch
        (``ceil(n_rows / batch_size)`` updates, each after ``critic_steps`` critic
        updates) and refits the attributes from the averaged encoder (PICA's and ICA's
        ``mean_`` and variances over every row seen so far). No stopping rule ends a
        stream: watch the held-out estimate in ``history_`` and stop sending batches.
        ``fit`` starts afresh.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            A batch of rows (at least 2), with the features of the first batch. A
            memory-mapped or Dask array is taken a block of rows at a time (64 MB of a
            memory map; a Dask array's row chunks, split where larger than 64 MB), each block
            a batch of its own, so that it is never held whole.
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

    def transform(self, X):
        """Encode ``X`` into its components.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            New data, with the features seen in ``fit``; a memory-mapped array is read a
            block at a time.

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_components)
            The representation of ``X``, in the dtype of ``X`` (float32 or float64); for a
            Dask array, a lazy Dask array of the same row chunks.
        """
        check_is_fitted(self)
        if is_chunked(X):
            X = check_chunked(self, X, reset=False)
        else:
            X = validate_data(self, X, dtype=[np.float64, np.float32], reset=False)
        return self._blockwise("_transform", X, self.n_components_)

    def inverse_transform(self, X):
        """Map components back to the input space (the decoder).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_components)
            Representations, as ``transform`` returns them (a Dask array too).

        Returns
        -------
        X_original : ndarray of shape (n_samples, n_features)
            The reconstruction; for a Dask array, a lazy Dask array.
        """
        check_is_fitted(self)
        if is_chunked(X):
            Z = check_chunked(self, X, reset=False, n_features=self.n_components_)
        else:
            Z = check_array(X, dtype=[np.float64, np.float32], input_name="X")
            if Z.shape[1] != self.n_components_:
                raise ValueError(
                    f"X has {Z.shape[1]} features, but {type(self).__name__} is expecting "
                    f"{self.n_components_} components as input."
                )
        return self._blockwise("_inverse_transform", Z, self.n_features_in_)

    def _blockwise(self, method, X, n_outputs):
        """``self.<method>(X)``; of a :class:`~sklearn_adm._data.chunked.ChunkedArray`,
        block by block, by a copy of the estimator without a stream's open game: each task
        of a Dask array's graph carries the fitted attributes, not ``partial_fit``'s state
        (the game and its rows, hundreds of MB)."""
        if not isinstance(X, ChunkedArray):
            return getattr(self, method)(X)
        fitted = copy.copy(self)
        fitted._stream = None
        function = getattr(fitted, method)
        dtype = function(np.zeros((1, X.shape[1]), dtype=X.dtype)).dtype
        return X.map_rows(function, n_outputs, dtype)

    def _fit(self, X):
        """Validate ``X``, play the game and store the fitted state; return the validated X (a
        :class:`~sklearn_adm._data.chunked.ChunkedArray` where ``X`` is memory-mapped or a Dask
        array). Torch and the game are imported here, not with the package: a fitted model
        transforms without them."""
        import torch

        from .._runtime.allocator import training_allocations
        from .._runtime.device import resolve_device
        from .._runtime.threads import FitThreads
        from ..game._history import warn_game_outcome
        from ..game._loop import AdversarialGame
        from ..game._settings import GameResult

        self._stream = None  # a fit starts afresh, also after partial_fit
        X = self._validate_for_fit(X)
        n_components = self._resolve_n_components(X)
        self.device_ = str(resolve_device(self.device))  # a str: no torch to unpickle
        rng = check_random_state(self.random_state)
        seed = int(rng.randint(np.iinfo(np.int32).max))
        streamed = isinstance(X, ChunkedArray)
        n_train, load = (self._streamed_split if streamed else self._split)(X, rng, seed)

        settings = self._game_settings(n_train, n_components)
        with FitThreads(self._step_size(n_components, settings, len(X))):
            data = load()
            with training_allocations():
                autoencoder, critic = self._build(X.shape[1], n_components, data.start, seed)
                if autoencoder.fixed:  # one solve, no game
                    autoencoder.finish()
                    result = GameResult(history=[], n_iter=1, converged=True, best_init=0)
                else:
                    X_train = data.train.prepared(autoencoder.prepare)
                    X_val = autoencoder.prepare(data.val)
                    generator = torch.Generator(device=self.device_).manual_seed(seed)
                    policies = self._game_policies()
                    game = AdversarialGame(autoencoder, critic, settings, policies, generator)
                    with X_train:
                        result = game.play(X_train, X_val, desc=type(self).__name__)

            warn_game_outcome(result, type(self).__name__, settings.max_iter)
            self.n_iter_ = result.n_iter
            self.history_ = result.history
            self._store_fitted(autoencoder.cpu(), result.best_init, X, data.mean, data.scale)
        self.n_components_ = n_components
        return X

    def _partial_fit(self, X):
        """One pass of the game over the batch ``X``; the first batch opens the game
        (:meth:`_open_stream`). The fitted attributes are then those of the averaged encoder
        as it stands, on the moments of every row seen."""
        from .._data.streaming import TensorRows
        from .._runtime.allocator import training_allocations
        from .._runtime.device import resolve_device
        from .._runtime.threads import FitThreads
        from ..game._history import warn_game_outcome

        first = getattr(self, "_stream", None) is None
        X = validate_data(
            self, X, dtype=[np.float64, np.float32], reset=first, ensure_min_samples=2
        )
        if first:
            n_components = self._resolve_n_components(X)
            self.device_ = str(resolve_device(self.device))
            rng = check_random_state(self.random_state)
            seed = int(rng.randint(np.iinfo(np.int32).max))
            train_rows, val_rows = split_rows(len(X), self.validation_fraction, rng)
            settings = self._game_settings(len(train_rows), n_components)
        else:
            stream = self._stream
            n_components, settings, train_rows = self.n_components_, stream.settings, slice(None)
        start_rows = len(X) if first else 0
        with FitThreads(self._step_size(n_components, settings, start_rows)):
            with training_allocations():
                if first:
                    self._stream = stream = self._open_stream(
                        X, train_rows, val_rows, n_components, settings, seed
                    )
                if stream.game is not None:
                    batch = TensorRows(stream.autoencoder.prepare(stream.scaled(X[train_rows])))
                    if not first:
                        stream.batches += 1
                        stream.game.absorb(batch.X, stream.seed + stream.batches)
                    steps = -(-len(batch) // settings.batch_size)  # one pass over the batch
                    result = stream.game.play(batch, stream.val, steps, desc=type(self).__name__)
                    warn_game_outcome(result, type(self).__name__, None)
                    autoencoder, leader = result.model, result.best_init
                    self.n_iter_, self.history_ = result.n_iter, result.history
                else:  # a model solved once, on the first batch
                    autoencoder, leader = copy.deepcopy(stream.autoencoder), 0
                    self.n_iter_, self.history_ = 1, []
                stream.moments = Moments.of(X).merge(stream.moments)
                self._store_fitted(
                    autoencoder.cpu(),  # a copy: the stream's game goes on
                    leader,
                    stream.moments,
                    stream.mean,
                    stream.scale,
                )
        self.n_components_ = n_components
        return self

    def _open_stream(self, X, train_rows, val_rows, n_components, settings, seed):
        """The game that ``partial_fit`` plays on, made from its first batch ``X``: the
        scaling of its training rows, the start built from them, the held-out rows (the
        game opens, its critic warming up, as it plays the first batch)."""
        import torch

        from .._data.streaming import TensorRows
        from ..game._loop import AdversarialGame

        mean, scale = fit_scaling(X, self._per_feature_scaling, rows=train_rows)
        stream = _Stream(settings, mean, scale, self.device_, seed=seed)
        X_train = stream.scaled(X[train_rows])
        start = TensorRows(stream.scaled(X) if self._start_from_all_rows else X_train)
        autoencoder, critic = self._build(X.shape[1], n_components, start, seed)
        stream.autoencoder = autoencoder
        if autoencoder.fixed:
            autoencoder.finish()
            return stream
        stream.val = autoencoder.prepare(stream.scaled(X[val_rows]))
        generator = torch.Generator(device=self.device_).manual_seed(seed)
        policies = self._game_policies()
        stream.game = AdversarialGame(autoencoder, critic, settings, policies, generator)
        return stream

    def _validate_for_fit(self, X):
        if is_chunked(X):
            return check_chunked(self, X, reset=True)
        return validate_data(self, X, dtype=[np.float64, np.float32], ensure_min_samples=2)

    def _split(self, X, rng, seed):
        """The number of training rows of in-memory ``X``, and a function that returns the
        :class:`_TrainingData`: distinct records, split into training and held-out rows,
        scaled on the training rows, as float32 tensors on the device."""

        from .._data.streaming import TensorRows

        records = distinct_records(X)
        train_rows, val_rows = split_rows(len(records), self.validation_fraction, rng)

        def load():
            mean, scale = fit_scaling(X, self._per_feature_scaling, rows=records[train_rows])
            X_scaled = scaled_rows(X, records, mean, scale, self.device_)
            train = TensorRows(X_scaled[train_rows])
            start = TensorRows(X_scaled) if self._start_from_all_rows else train
            return _TrainingData(train, X_scaled[val_rows], start, mean, scale)

        return len(train_rows), load

    def _streamed_split(self, source, rng, seed):
        """:meth:`_split` for a :class:`~sklearn_adm._data.chunked.ChunkedArray`: held-out
        rows drawn at random (at most ``MAX_HELD_OUT_ROWS``), read once; the scaling from the
        moments of all rows (one pass); the training rows streamed from the array. Repeated
        rows are not looked for: that would take a pass over the data of its own."""
        import torch

        from .._data.streaming import StreamedRows, held_out_rows

        n_samples = len(source)
        held_out = held_out_rows(n_samples, self.validation_fraction, seed)
        val_rows = held_out
        if len(held_out) < MIN_VALIDATION_ROWS or n_samples - len(held_out) < 2:
            held_out, val_rows = np.empty(0, dtype=np.intp), np.arange(n_samples)

        def load():
            moments, val_values = source.moments_and_rows(val_rows)
            mean, scale = scaling_from_moments(
                moments.mean,
                np.diag(moments.covariance()),
                moments.unit,
                self._per_feature_scaling,
            )

            def scale_rows(rows):
                scaled = rows.astype(np.float64)  # one float64 copy, scaled in place
                scaled -= mean
                scaled /= scale
                return scaled.astype(np.float32)

            # the covariance of the scaled rows: the moments' over the scale's outer product
            ratio = moments.unit / np.broadcast_to(scale, mean.shape)
            covariance = moments.covariance() * np.outer(ratio, ratio)
            device = torch.device(self.device_)
            train = StreamedRows(
                source,
                held_out,
                scale_rows,
                torch.as_tensor(covariance, device=device),
                seed,
                device,
            )
            val = torch.as_tensor(scale_rows(val_values), device=device)
            return _TrainingData(train, val, train, mean, scale)

        return n_samples - len(held_out), load

    def _resolve_n_components(self, X):
        """The number of components a fit of ``X`` learns: ``n_components``, all features
        when None, or as PCA resolves a share of variance in (0, 1) or ``"mle"``."""
        n_features = X.shape[1]
        if isinstance(self.n_components, str | float):
            return pca_count(X, self.n_components)
        n_components = n_features if self.n_components is None else self.n_components
        if n_components > n_features:
            raise ValueError(
                f"n_components={n_components} must be between 1 and n_features={n_features}."
            )
        return n_components

    def _step_size(self, n_components, settings, start_rows):
        """Elements of the largest tensor of the fit's steps: the critic's first hidden layer
        of every start (features x units x rows), or building the start from ``start_rows``
        rows where that is more (:meth:`_start_size`)."""
        width = self.critic_hidden if isinstance(self.critic_hidden, int) else self.critic_hidden[0]
        critic = n_components * self.n_init * width * settings.critic_batch_size
        return max(critic, self._start_size(start_rows, n_components))

    def _start_size(self, n_rows, n_components):
        """Elements of the largest tensor of building the start from ``n_rows`` rows; by
        default no more than the critic's."""
        return 0

    def _build(self, n_features, n_components, start_rows, seed):
        """The autoencoder, built from ``start_rows``, and its critic (None where the
        autoencoder is ``fixed``), seeded, on ``self.device_``."""
        import torch

        from ..nn._critic import ADMCritic

        with torch.random.fork_rng(devices=[]):  # seed module init without touching the user's RNG
            torch.manual_seed(seed)
            autoencoder = self._make_autoencoder(n_features, n_components, start_rows)
            if autoencoder.fixed:
                return autoencoder.to(self.device_), None
            critic = ADMCritic(
                n_components * self.n_init,
                critic_hidden=self.critic_hidden,
                probe_hidden=self.probe_hidden,
                probes=self.probes,
                n_groups=self.n_init,
            )
        return autoencoder.to(self.device_), critic.to(self.device_)

    @abstractmethod
    def _game_settings(self, n_train, n_components):
        """The game's :class:`~sklearn_adm.game._settings.GameSettings` for ``n_train``
        training rows and ``n_components`` components (:meth:`_settings_from_parameters`
        fills what the parameters say)."""

    @abstractmethod
    def _game_policies(self):
        """The game's :class:`~sklearn_adm.game._settings.GamePolicies`, new for each game."""

    def _settings_from_parameters(self, n_train, n_components, **numbers):
        """:class:`~sklearn_adm.game._settings.GameSettings` from the parameters as they are
        named (the loss weights where the estimator has them: no variance hinge otherwise),
        updated with the estimator's own ``numbers`` (``warmup_steps``, at least)."""
        from ..game._settings import GameSettings

        batch_rows = self._batch_rows(n_train)
        weights = {
            name: getattr(self, name)
            for name in ("dependence_weight", "reconstruction_weight", "variance_weight")
            if hasattr(self, name)
        }
        named = dict(
            critic_steps=self.critic_steps,
            batch_size=batch_rows,
            critic_batch_size=batch_rows,
            max_iter=self.max_iter,
            learning_rate=self.learning_rate,
            critic_learning_rate=self.critic_learning_rate,
            verbose=self.verbose,
        )
        return GameSettings(**{"variance_weight": 0.0, **weights, **named, **numbers})

    def _batch_rows(self, n_train):
        """Rows of the encoder's minibatches: ``batch_size``, at most the training rows."""
        return n_train if self.batch_size is None else min(self.batch_size, n_train)

    @staticmethod
    def _critic_rows(batch_rows, n_components, work):
        """Rows of the critic's minibatches. A critic step costs its rows times its features:
        beyond ``work`` rows x components they shrink (to ``_MIN_CRITIC_ROWS`` at least)."""
        return min(batch_rows, max(_MIN_CRITIC_ROWS, work // n_components))

    @property
    def _n_features_out(self):
        return self.n_components_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags
