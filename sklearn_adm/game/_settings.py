"""The game's settings, filled by each estimator from its parameters, and its result."""

from dataclasses import dataclass


@dataclass(frozen=True)
class GameSettings:
    """The knobs of the game; estimators fill them from their public parameters."""

    dependence_weight: float
    reconstruction_weight: float
    variance_weight: float
    critic_steps: int
    batch_size: int
    #: rows of the critic's minibatches
    critic_batch_size: int
    max_iter: int
    learning_rate: float
    critic_learning_rate: float
    tol: float
    n_iter_no_change: int
    verbose: int = 0
    #: encoder updates between two evaluations on the held-out rows
    eval_every: int = 10
    #: decay of the moving average of the encoder's parameters
    ema_decay: float = 0.95
    #: critic updates on the initial representations before the first encoder update
    warmup_steps: int = 200
    #: held-out rows on which the autoencoder's selection penalty is computed
    selection_rows: int = 1024
    #: evaluations whose mean criterion ranks the starts (one evaluation is noisy)
    rank_window: int = 1
    #: ``(n_iter, keep)`` pairs, in order: after update ``n_iter`` only the ``keep`` leading
    #: starts play on (none: all of them, to the end)
    narrowing: tuple[tuple[int, int], ...] = ()
    #: rank the starts for narrowing by the autoencoder's selection penalty alone (the
    #: objective, still falling at different rates, would hide it)
    narrow_on_penalty: bool = False
    #: the encoder's step size at update t is learning_rate / (1 + t / learning_rate_decay)
    learning_rate_decay: float | None = None
    #: stop when the leading start's held-out objective has not improved by ``tol`` over
    #: ``n_iter_no_change`` updates (instead of when its representation stops changing)
    stop_on_objective: bool = False
    #: stop, before the first update too, when the held-out critic finds no more dependence
    #: than independence gives (:func:`within_noise`)
    stop_when_independent: bool = False
    #: keep the game's encoder only where a critic that did not play finds less dependence
    #: on the held-out rows in it than in the start (:meth:`AdversarialGame.confirm`); for
    #: games whose starts are not narrowed
    confirm_with_fresh_critic: bool = False


@dataclass
class GameResult:
    history: list
    n_iter: int
    converged: bool
    best_init: int
    #: whether an update's loss was not finite (the model of the last evaluation is kept)
    diverged: bool = False
