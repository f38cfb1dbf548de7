"""What an estimator hands the game: its numbers (:class:`GameSettings`) and its policies
(:class:`GamePolicies`); and what the game hands back (:class:`GameResult`)."""

from dataclasses import dataclass, field

from ._confirmation import NoConfirmation
from ._selection import StartSelection

#: encoder updates between two evaluations on the held-out rows
EVAL_EVERY = 10
#: decay of the encoder's moving average, the game's result (it settles the adversary's jitter)
EMA_DECAY = 0.95
#: held-out rows on which the autoencoder's selection penalty is computed
SELECTION_ROWS = 1024


@dataclass(frozen=True)
class GameSettings:
    """The numbers of the game; each estimator fills them from its parameters."""

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
    #: critic updates on the initial representations before the first encoder update
    warmup_steps: int
    #: the encoder's step size at update t is learning_rate / (1 + t / learning_rate_decay)
    #: (None: constant)
    learning_rate_decay: float | None = None
    verbose: int = 0
    eval_every: int = EVAL_EVERY
    ema_decay: float = EMA_DECAY
    selection_rows: int = SELECTION_ROWS


@dataclass
class GamePolicies:
    """How a game stops, which start leads and plays on, and who confirms its result.

    ``stopping`` is a tuple of rules of :mod:`sklearn_adm.game._stopping` (the game stops
    when one of them says so); ``selection`` a
    :class:`~sklearn_adm.game._selection.StartSelection`; ``confirmation`` one of
    :mod:`sklearn_adm.game._confirmation`. The rules and the selection keep records:
    make new ones for every game."""

    stopping: tuple
    selection: StartSelection = field(default_factory=StartSelection)
    confirmation: object = field(default_factory=NoConfirmation)


@dataclass
class GameResult:
    history: list
    n_iter: int
    converged: bool
    best_init: int
    #: whether an update's loss was not finite (the model of the last evaluation is kept)
    diverged: bool = False
    #: the averaged encoder, finished and confirmed (None where no game was played)
    model: object = None
