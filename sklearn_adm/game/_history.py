"""What a game leaves behind: the history of its updates and evaluations, and the warning an
estimator gives where a game diverged or ran out of updates."""

import torch
from sklearn.exceptions import ConvergenceWarning

from .._runtime.warnings import warn

#: the training and held-out terms of each record, in order
TERMS = ("objective", "reconstruction", "critic_mse", "variance_penalty")


class History:
    """Every update's training terms for every start, and every evaluation's held-out
    terms and stopping readings; cut with the starts, read for the kept start at the end."""

    def __init__(self):
        self.records = []

    def update(self, n_iter, values):
        """The training terms ``(4, n_init)`` of update ``n_iter``."""
        self.records.append({"iteration": n_iter, "train": values.detach().cpu()})

    def evaluation(self, n_iter, objective, terms, **readings):
        """The held-out terms of the evaluation after update ``n_iter`` (0: before any), and
        the stopping rules' readings (named as the history names them)."""
        if not self.records or self.records[-1]["iteration"] != n_iter:
            self.records.append({"iteration": n_iter})
        self.records[-1]["val"] = torch.stack([objective, *terms]).cpu()
        self.records[-1].update(readings)

    def note(self, **readings):
        """Add ``readings`` to the last record."""
        self.records[-1].update(readings)

    def keep_starts(self, keep):
        for record in self.records:
            for key in ("train", "val"):
                if key in record:
                    record[key] = record[key][:, keep]

    def entries(self, init):
        """The history of start ``init``: one dict per update (and the evaluation before
        the first update, where there is one)."""
        return [_entry(record, init) for record in self.records]


def _entry(record, init):
    entry = {"iteration": record["iteration"]}
    if "train" in record:  # not before the first update
        entry.update(zip(TERMS, record["train"][:, init].tolist(), strict=True))
    if "val" in record:
        entry.update(zip(["val_" + t for t in TERMS], record["val"][:, init].tolist(), strict=True))
    entry.update({k: v for k, v in record.items() if k not in ("iteration", "train", "val")})
    return entry


def warn_game_outcome(result, desc, max_iter):
    """Warn (scikit-learn's ConvergenceWarning) where a game diverged, or ran to ``max_iter``
    (None: not asked) before its stopping rule was met; ``result`` has ``diverged``,
    ``converged`` and ``n_iter``."""
    if result.diverged:
        warn(
            f"{desc}: training diverged at iteration {result.n_iter} (the loss is not finite); "
            "the model was restored to its last good state. Lower learning_rate or "
            "critic_learning_rate, or check the input for extreme values.",
            ConvergenceWarning,
        )
    elif max_iter is not None and not result.converged and result.n_iter == max_iter:
        warn(
            f"{desc}: max_iter={max_iter} reached before training converged (its "
            "stopping rule: tol and n_iter_no_change); consider increasing max_iter.",
            ConvergenceWarning,
        )
