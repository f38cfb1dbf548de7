"""What every policy of the game shares: it reads an :class:`Evaluation` and returns a
:class:`Decision` that the game applies.

The game's policies are its start selection (which start leads, which play on), its stopping
rules and its confirmation (whether a critic that did not play agrees with the result). After
every held-out evaluation the game hands the evaluation to each in that order; each policy's
decision is applied before the next one reads (a narrowing evaluates the starts kept again,
a new leader is the one the rules read), and the game stops where any one says so. At the end
the confirmation alone reads the game's result (:attr:`Evaluation.encoder`).
"""

from dataclasses import dataclass, field

import torch


@dataclass(frozen=True)
class Evaluation:
    """One held-out evaluation, as the policies read it."""

    #: encoder updates so far (0: before the first)
    n_iter: int
    #: the leading start
    leader: int
    n_init: int
    #: each start's held-out objective, ``(n_init,)``
    objective: torch.Tensor = None
    #: each start's held-out reconstruction, critic MSE and variance penalty, ``(n_init,)`` each
    terms: tuple = None
    #: the held-out codes whose change :class:`~._stopping.RepresentationChange` measures
    codes: torch.Tensor = None
    #: held-out rows, and features of one start (the critic's MSE is their mean)
    n_rows: int = None
    n_features: int = None
    #: what ranks the starts: the objective plus the autoencoder's selection penalty
    criterion: torch.Tensor = None
    #: whether a policy that read before has decided to stop
    stop: bool = False
    #: the game and its rows ``(X_train, X_val)``, for a policy that trains on them
    game: object = None
    data: tuple = None
    #: the game's result, finished, where the game has ended (the other readings are then None)
    encoder: object = None


@dataclass(frozen=True)
class Decision:
    """What a policy decides; the game applies it."""

    #: stop the game after this evaluation
    stop: bool = False
    #: the starts that play on, in the order of their rank (None: all)
    keep: list = None
    #: the leading start, among those that play on (None: as it was)
    leader: int = None
    #: return the game's start instead of its result
    restore_start: bool = False
    #: what the history keeps of this evaluation, by name
    readings: dict = field(default_factory=dict)


class Policy:
    """The interface of a game's policy; a policy keeps records, so a game needs new ones."""

    #: whether the policy also reads the evaluation before the first update
    reads_start = False

    def open(self, game):
        """Read what the game starts from, before it plays (nothing, by default)."""

    def decide(self, evaluation):
        """The :class:`Decision` that ``evaluation`` leads to."""
        raise NotImplementedError

    def keep_starts(self, keep, n_init):
        """Cut the records down to the starts ``keep`` of ``n_init`` (nothing, by default)."""
