"""The game's stopping rules, its independence test and the history it keeps."""

import dataclasses

import numpy as np
import torch

from sklearn_adm.game._history import History
from sklearn_adm.game._policy import Decision, Evaluation
from sklearn_adm.game._selection import StartSelection
from sklearn_adm.game._stopping import (
    IndependenceReached,
    ObjectivePlateau,
    RepresentationChange,
    within_noise,
)
from sklearn_adm.nn._training import calibrated_fit


def _evaluation(n_iter, objective, codes, leader, n_init, critic_mse=None, n_rows=200):
    terms = (None, critic_mse, None)
    return Evaluation(n_iter, leader, n_init, objective, terms, codes, n_rows=n_rows, n_features=4)


def _read(rule, evaluation):
    """Whether ``rule`` stops the game at ``evaluation``, and its readings."""
    decision = rule.decide(evaluation)
    return decision.stop, decision.readings


def test_within_noise_holds_its_level_for_predictions_independent_of_their_targets():
    """Fixed predictions of independent targets, each shrunk on the same held-out rows: the
    test finds dependence in 1-2 % of draws (3 standard deviations of a skewed sum)."""
    generator = torch.Generator().manual_seed(0)
    n_rows, n_features, draws = 200, 4, 400
    target = torch.randn(draws, n_rows, n_features, generator=generator)
    prediction = torch.randn(draws, n_rows, n_features, generator=generator)
    _, mse = calibrated_fit(target, prediction)
    found = [not within_noise(m.mean(), n_rows, n_features) for m in mse]
    assert np.mean(found) < 0.05


def test_within_noise_finds_a_tenth_of_explained_variance():
    assert not within_noise(0.9, n_rows=200, n_features=4)
    assert within_noise(1.0, n_rows=200, n_features=4)


def test_objective_plateau_counts_the_updates_since_the_last_real_improvement():
    rule = ObjectivePlateau(tol=0.01, n_iter_no_change=30)
    readings = [
        _read(rule, _evaluation(n_iter, torch.tensor([value]), None, 0, 1))
        for n_iter, value in [(10, 1.0), (20, 0.5), (30, 0.495), (40, 0.4905), (50, 0.4901)]
    ]
    assert [reading["val_updates_without_improvement"] for _, reading in readings] == [
        0,
        0,
        10,
        20,
        30,
    ]
    assert [converged for converged, _ in readings] == [False] * 4 + [True]


def test_representation_change_is_relative_to_the_codes_variance():
    rule = RepresentationChange(tol=1e-3, n_iter_no_change=20, eval_every=10)
    codes = torch.randn(100, 4, generator=torch.Generator().manual_seed(0))  # 2 starts x 2
    moving = codes.clone()
    moving[:, 2:] *= 1.1  # the second start keeps moving
    inf = float("inf")
    assert _read(rule, _evaluation(10, None, codes, 0, 2)) == (
        False,
        {"val_change": inf, "val_change_half": inf},
    )
    _read(rule, _evaluation(20, None, codes, 0, 2))
    converged, changes = _read(rule, _evaluation(30, None, codes, 0, 2))
    assert converged and changes["val_change"] == 0.0
    converged, changes = _read(rule, _evaluation(40, None, moving, 1, 2))
    assert not converged and changes["val_change"] > 0.005
    rule.keep_starts([1], 2)
    assert all(snapshot.shape == (100, 2) for _, snapshot in rule.snapshots)


def _drifting_codes(step, n_evaluations):
    """Codes that move by ``step`` (of their spread) per evaluation along one direction."""
    codes = torch.randn(500, 2, generator=torch.Generator().manual_seed(0))
    direction = torch.randn(500, 2, generator=torch.Generator().manual_seed(1))
    return [codes + k * step * direction for k in range(1, n_evaluations + 1)]


def test_representation_change_stops_a_still_game_after_half_the_window():
    """Codes that no longer move converge at update 70 of a window of 120, as soon as half
    the window is seen, where the whole window's rule waits for update 130."""
    rule = RepresentationChange(tol=2e-2, n_iter_no_change=120, eval_every=10)
    still = _drifting_codes(0.0, 1)[0]
    stops = [_read(rule, _evaluation(10 * k, None, still, 0, 1)) for k in range(1, 8)]
    assert [converged for converged, _ in stops] == [False] * 6 + [True]
    assert stops[-1][1] == {"val_change": float("inf"), "val_change_half": 0.0}


def test_representation_change_lets_a_drifting_game_run_the_whole_window():
    """A steady drift whose change over the whole window is just under ``tol`` changes by a
    quarter of that over half of it, far above ``tol / 32``: it stops when the whole window's
    rule says so, not before."""
    tol, window = 2e-2, 120
    # per evaluation, sqrt(0.9 tol) / 12 of the spread: 0.9 tol over 12 evaluations
    step = (0.9 * tol) ** 0.5 / 12
    rule = RepresentationChange(tol=tol, n_iter_no_change=window, eval_every=10)
    stops = [
        _read(rule, _evaluation(10 * k, None, codes, 0, 1))
        for k, codes in enumerate(_drifting_codes(step, 13), start=1)
    ]
    converged = [converged for converged, _ in stops]
    assert converged.index(True) == 12  # update 130, the first with the whole window seen
    half = stops[6][1]["val_change_half"]
    np.testing.assert_allclose(half, 0.9 * tol / 4, rtol=0.05)


def test_history_is_cut_with_the_starts_and_read_for_one():
    history = History()
    history.update(1, torch.arange(8.0).view(4, 2))
    history.evaluation(1, torch.tensor([9.0, 8.0]), [torch.ones(2)] * 3, val_change=0.5)
    history.keep_starts([1])
    (entry,) = history.entries(0)
    assert entry["objective"] == 1.0 and entry["val_objective"] == 8.0
    assert entry["val_change"] == 0.5


def test_independence_reached_reads_the_leaders_held_out_critic():
    rule = IndependenceReached()
    assert rule.reads_start
    independent = torch.tensor([0.9, 1.0])  # start 1's critic explains nothing
    assert _read(rule, _evaluation(0, None, None, 1, 2, critic_mse=independent)) == (
        True,
        {"independent": True},
    )
    assert _read(rule, _evaluation(10, None, None, 0, 2, critic_mse=independent))[0] is False


def test_start_selection_narrows_to_the_leading_starts_and_names_the_leader_among_them():
    """Ranked by the mean criterion over its window; after update 10 the two leading starts
    play on, in the order of their rank, and the leader is the first of them; the narrowing
    of ``narrow_by="penalty"`` ranks by the penalty alone (criterion less objective)."""

    def read(selection, n_iter, criterion, objective=(0.0, 0.0, 0.0, 0.0)):
        evaluation = _evaluation(n_iter, torch.tensor(objective), None, 0, len(criterion))
        criterion = torch.tensor(criterion)
        return selection.decide(dataclasses.replace(evaluation, criterion=criterion))

    selection = StartSelection(window=2, narrowing=((10, 2),))
    assert read(selection, 5, [3.0, 1.0, 2.0, 0.5]) == Decision(leader=3)
    # mean over the window: 2.0, 1.0, 2.5, 1.75
    assert read(selection, 10, [1.0, 1.0, 3.0, 3.0]) == Decision(keep=[1, 3], leader=0)
    selection.keep_starts([1, 3], 4)
    assert read(selection, 20, [2.0, -1.0]) == Decision(leader=1)  # means 1.5 and 1.0
    by_penalty = StartSelection(narrowing=((10, 1),), narrow_by="penalty")
    decision = read(by_penalty, 10, [1.0, 2.0, 3.0, 4.0], objective=(0.0, 1.9, 0.0, 0.0))
    assert decision.keep == [1]
