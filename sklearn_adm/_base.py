"""What PICA and NonlinearPICA share: parameters, validation, seeding, the call to the game."""

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
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, RealNotInt, StrOptions
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from ._scaling import fit_scaling

#: below this many held-out rows, the held-out estimate is too noisy: all rows serve both roles
_MIN_VALIDATION_ROWS = 10
#: the fewest rows of a critic's minibatch
_MIN_CRITIC_ROWS = 128
#: data are continuous when each column takes at least this share as many distinct values as
#: there are distinct rows (float32 rounding makes a few values coincide by chance)
_CONTINUOUS_SHARE = 0.9


def _n_components_constraint():
    """A count, a share of variance in (0, 1), or ``"mle"``, as PCA takes them."""
    return [
        Interval(Integral, 1, None, closed="left"),
        Interval(RealNotInt, 0, 1, closed="neither"),
        StrOptions({"mle"}),
        None,
    ]


def pca_count(X, n_components):
    """The number of components that scikit-learn's PCA keeps for ``n_components`` a share
    of variance in (0, 1) (the fewest principal directions that explain more) or ``"mle"``
    (Minka's choice of dimension)."""
    return int(PCA(n_components, svd_solver="full").fit(X).n_components_)


@dataclass(frozen=True)
class Schedule:
    """How an estimator plays the game, beyond what its public parameters say: one frozen
    object per estimator class."""

    #: scale each feature to unit variance (else one scale for all, keeping the geometry)
    per_feature_scaling: bool = False
    #: build the start from all rows, not only the training rows (the critic, which must not
    #: see the held-out rows, still trains on the training rows alone)
    start_from_all_rows: bool = False
    #: rows x components of the critic's minibatches (None: the encoder's ``batch_size``)
    critic_batch_work: int | None = None
    #: critic updates on the initial representations before the first encoder update
    warmup_steps: int = 200
    #: the encoder's step size decays as learning_rate / (1 + t / this) (None: constant)
    learning_rate_decay: float | None = None
    #: evaluations (every 10 updates) whose mean held-out criterion ranks the starts
    rank_window: int = 1
    #: encoder updates after which only the ``narrow_to`` leading starts play on (None: all
    #: to the end), ranked by the selection penalty alone with ``narrow_on_penalty``
    narrow_after: int | None = None
    narrow_to: int = 1
    narrow_on_penalty: bool = False
    #: stop on the held-out objective's plateau rather than on the representation's change
    stop_on_objective: bool = False
    #: stop, before the first update too, when the held-out critic finds no dependence
    stop_when_independent: bool = False


def _widths_constraint():
    return [Interval(Integral, 1, None, closed="left"), tuple]


def split_rows(n_samples, validation_fraction, rng):
    """Indices of the training rows and of the held-out rows (the same rows if too few)."""
    n_val = int(round(validation_fraction * n_samples))
    if n_val < _MIN_VALIDATION_ROWS or n_samples - n_val < 2:
        everything = np.arange(n_samples)
        return everything, everything
    order = rng.permutation(n_samples)
    return np.sort(order[n_val:]), np.sort(order[:n_val])


def distinct_records(X):
    """Indices of the rows the game learns from, in order.

    A continuous distribution does not draw the same row twice, so in continuous data a row
    that repeats exactly is a duplicated record (the same text embedded twice) and counts once,
    at its first occurrence. Where rows repeat because they are frequent (counts, small
    integers, categories), the repeats are the distribution and every row counts. The data are
    taken as continuous when the copies are fewer than the distinct rows and every column
    takes nearly as many distinct values as there are distinct rows.
    """
    n_samples = len(X)
    row_bytes = np.dtype((np.void, X.dtype.itemsize * X.shape[1]))
    _, first = np.unique(np.ascontiguousarray(X).view(row_bytes)[:, 0], return_index=True)
    if len(first) == n_samples or 2 * len(first) <= n_samples:
        return np.arange(n_samples)
    first = np.sort(first)
    column_values = 1 + (np.diff(np.sort(X[first], axis=0), axis=0) != 0).sum(axis=0)
    if column_values.min() < _CONTINUOUS_SHARE * len(first):
        return np.arange(n_samples)
    return first


class BaseADMTransformer(
    ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator, metaclass=ABCMeta
):
    """Base class of the ADM autoencoders. Do not use directly.

    A subclass builds its autoencoder (``_make_autoencoder``), says how the data are scaled
    (its ``_schedule``) and stores its fitted state (``_store_fitted``); everything else,
    from input validation to the training game, lives here once.
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

    #: how this estimator plays the game beyond its public parameters
    _schedule = Schedule()

    @abstractmethod
    def _make_autoencoder(self, n_features, n_components, X_train):
        """Return the module the game trains: ``n_init`` restarts side by side, built from
        ``X_train`` (all rows where the schedule's ``start_from_all_rows``).

        It has an ``n_init`` attribute, ``encode(x)`` returning the ``(n, n_init * n_components)``
        representations of all restarts, and ``reconstruction_error(x, z)`` returning each
        restart's mean squared error per entry, shape ``(n_init,)``.
        """

    @abstractmethod
    def _store_fitted(self, autoencoder, init, X, mean, scale):
        """Turn restart ``init`` of the trained autoencoder into fitted attributes."""

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
        y : Ignored
            Not used, present for API consistency by convention.

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_components)
            The representation of ``X``.
        """
        return self._transform(self._fit(X))

    def transform(self, X):
        """Encode ``X`` into its components.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            New data, with the features seen in ``fit``.

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_components)
            The representation of ``X``, in the dtype of ``X`` (float32 or float64).
        """
        check_is_fitted(self)
        X = validate_data(self, X, dtype=[np.float64, np.float32], reset=False)
        return self._transform(X)

    def inverse_transform(self, X):
        """Map components back to the input space (the decoder).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_components)
            Representations, as ``transform`` returns them.

        Returns
        -------
        X_original : ndarray of shape (n_samples, n_features)
            The reconstruction.
        """
        check_is_fitted(self)
        Z = check_array(X, dtype=[np.float64, np.float32], input_name="X")
        if Z.shape[1] != self.n_components_:
            raise ValueError(
                f"X has {Z.shape[1]} features, but {type(self).__name__} is expecting "
                f"{self.n_components_} components as input."
            )
        return self._inverse_transform(Z)

    def _fit(self, X):
        """Validate ``X``, play the game and store the fitted state; return the validated X.
        Torch and the game are imported here, not with the package: a fitted model
        transforms without them."""
        import torch

        from ._allocator import training_allocations
        from ._device import resolve_device
        from ._game import AdversarialGame, GameResult
        from ._threads import FitThreads

        X = validate_data(self, X, dtype=[np.float64, np.float32], ensure_min_samples=2)
        n_samples, n_features = X.shape
        n_components = self._resolve_n_components(X)
        self.device_ = str(resolve_device(self.device))  # a str: no torch to unpickle
        rng = check_random_state(self.random_state)
        seed = int(rng.randint(np.iinfo(np.int32).max))
        records = distinct_records(X)
        train_rows, val_rows = split_rows(len(records), self.validation_fraction, rng)

        settings = self._game_settings(len(train_rows), n_components)
        with FitThreads(self._step_size(n_components, settings)) as threads:
            X64 = X.astype(np.float64, copy=False)
            if len(records) < n_samples:
                X64 = X64[records]
            mean, scale = fit_scaling(X64[train_rows], self._schedule.per_feature_scaling)
            X_scaled = torch.as_tensor(
                (X64 - mean) / scale, dtype=torch.float32, device=self.device_
            )
            X_train, X_val = X_scaled[train_rows], X_scaled[val_rows]

            with training_allocations():
                autoencoder, critic = self._build(n_features, n_components, X_scaled, X_train, seed)
                if autoencoder.fixed:  # one solve, no game
                    autoencoder.finish()
                    result = GameResult(history=[], n_iter=1, converged=True, best_init=0)
                else:
                    X_train, X_val = autoencoder.prepare(X_train), autoencoder.prepare(X_val)
                    generator = torch.Generator(device=self.device_).manual_seed(seed)
                    game = AdversarialGame(autoencoder, critic, settings, generator)
                    result = game.play(
                        X_train, X_val, desc=type(self).__name__, on_evaluation=threads.rebalance
                    )

            self.n_iter_ = result.n_iter
            self.history_ = result.history
            self._store_fitted(autoencoder.cpu(), result.best_init, X, mean, scale)
        self.n_components_ = n_components
        return X

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

    def _step_size(self, n_components, settings):
        """Elements of a training step's largest tensor, the critic's first hidden layer of
        every start: features x units x rows."""
        width = self.critic_hidden if isinstance(self.critic_hidden, int) else self.critic_hidden[0]
        return n_components * self.n_init * width * settings.critic_batch_size

    def _build(self, n_features, n_components, X_scaled, X_train, seed):
        """The autoencoder and its critic (None where the autoencoder is ``fixed``), seeded,
        on ``self.device_``."""
        import torch

        from ._critic import ADMCritic

        with torch.random.fork_rng(devices=[]):  # seed module init without touching the user's RNG
            torch.manual_seed(seed)
            X_start = X_scaled if self._schedule.start_from_all_rows else X_train
            autoencoder = self._make_autoencoder(n_features, n_components, X_start)
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

    def _game_settings(self, n_train, n_components):
        """The game's settings; no variance hinge unless the estimator has a
        ``variance_weight``."""
        from ._game import GameSettings

        return GameSettings(
            dependence_weight=self.dependence_weight,
            reconstruction_weight=self.reconstruction_weight,
            variance_weight=getattr(self, "variance_weight", 0.0),
            **self._shared_game_settings(n_train, n_components),
        )

    def _shared_game_settings(self, n_train, n_components):
        """The settings every estimator takes from its parameters as they are named."""
        batch_size = n_train if self.batch_size is None else min(self.batch_size, n_train)
        return dict(
            critic_steps=self.critic_steps,
            batch_size=batch_size,
            critic_batch_size=self._critic_batch_size(batch_size, n_components),
            max_iter=self.max_iter,
            learning_rate=self._encoder_learning_rate(n_components),
            critic_learning_rate=self.critic_learning_rate,
            tol=self.tol,
            n_iter_no_change=self.n_iter_no_change,
            verbose=self.verbose,
            narrow_after=self._schedule.narrow_after,
            narrow_to=self._schedule.narrow_to,
            narrow_on_penalty=self._schedule.narrow_on_penalty,
            learning_rate_decay=self._decay_horizon(n_train),
            warmup_steps=self._schedule.warmup_steps,
            stop_on_objective=self._schedule.stop_on_objective,
            stop_when_independent=self._schedule.stop_when_independent,
            rank_window=self._schedule.rank_window,
        )

    def _critic_batch_size(self, batch_size, n_components):
        """Rows of the critic's minibatches. A critic step costs its rows times its features:
        with the schedule's ``critic_batch_work`` set, the minibatches shrink beyond that many
        rows x components (to ``_MIN_CRITIC_ROWS`` at least); else they are the encoder's."""
        work = self._schedule.critic_batch_work
        if work is None:
            return batch_size
        return min(batch_size, max(_MIN_CRITIC_ROWS, work // n_components))

    def _encoder_learning_rate(self, n_components):
        """The encoder's initial step size for ``n_components`` components."""
        return self.learning_rate

    def _decay_horizon(self, n_train):
        """Updates after which the encoder's step has halved (None: it does not decay)."""
        return self._schedule.learning_rate_decay

    @property
    def _n_features_out(self):
        return self.n_components_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags
