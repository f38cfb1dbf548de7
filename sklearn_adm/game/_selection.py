"""Which of the game's starts leads, and which play on: the start-selection policy."""

import torch

from ._policy import Decision, Policy


class StartSelection(Policy):
    """Ranks the starts by their held-out criterion and, on a schedule, lets the leading
    ones alone play on.

    Parameters
    ----------
    window : int, default=1
        Evaluations whose mean criterion ranks the starts (one evaluation is noisy).
    narrowing : tuple of (int, int), default=()
        ``(n_iter, keep)`` pairs, in order: after update ``n_iter`` only the ``keep`` leading
        starts play on (none: all of them, to the end).
    narrow_by : {"criterion", "penalty"}, default="criterion"
        What ranks the starts when they are narrowed: the mean criterion, or the
        autoencoder's selection penalty alone (where the objective, still falling at
        different rates, would hide it).
    """

    def __init__(self, window=1, narrowing=(), narrow_by="criterion"):
        if narrow_by not in ("criterion", "penalty"):
            raise ValueError(f"narrow_by must be 'criterion' or 'penalty', got {narrow_by!r}.")
        self.window, self.narrowing, self.narrow_by = window, dict(narrowing), narrow_by
        self.criteria = []  # the last ``window`` evaluations' criteria, ``(n_init,)`` each

    def decide(self, evaluation):
        """Record the evaluation's criterion; decide the starts that play on (where the
        schedule narrows them) and the leader among them: the start of the least mean
        criterion (the first, among equals)."""
        criterion = evaluation.criterion
        self.criteria = [*self.criteria, criterion][-self.window :]
        keep = self._to_keep(evaluation.n_iter, criterion, evaluation.objective)
        kept = self.criteria if keep is None else [c[keep] for c in self.criteria]
        leader = int(torch.stack(kept).mean(dim=0).argsort(stable=True)[0])
        return Decision(keep=keep, leader=leader)

    def _to_keep(self, n_iter, criterion, objective):
        """The starts that play on after update ``n_iter``, in the order of their rank, or
        None where all of them do."""
        n_init = len(criterion)
        keep = self.narrowing.get(n_iter, n_init)
        if keep >= n_init:
            return None
        if self.narrow_by == "penalty":
            ranking = (criterion - objective).argsort(stable=True)
        else:
            ranking = torch.stack(self.criteria).mean(dim=0).argsort(stable=True)
        return ranking[:keep].tolist()

    def keep_starts(self, keep, n_init):
        self.criteria = [criterion[keep] for criterion in self.criteria]
