"""The threads a fit computes with: the caller's cap, the free cores, the work's size, the
user's override, and the caller's settings given back."""

import subprocess
import sys
import time

import numpy as np
import pytest
import torch
from threadpoolctl import threadpool_info

from sklearn_adm import ICA, PICA, DependenceScorer, training_threads
from sklearn_adm._numerics import spacings
from sklearn_adm._runtime import threads as runtime_threads
from sklearn_adm.datasets import make_embedding_like
from sklearn_adm.game._loop import AdversarialGame

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

X, _ = make_embedding_like(600, 16, random_state=0)
#: 4 components x 4 starts x 32 units x 540 training rows: work for 4 threads
LARGE = {"n_components": 4, "max_iter": 20, "random_state": 0}


@pytest.fixture
def cores(monkeypatch):
    """Four usable cores, other processes keeping ``load["others"]`` of them busy (a number,
    or a function of nothing), and the meter's last reading ``load["age"]`` seconds old
    (current by default)."""
    load = {"others": 0.0, "age": 0.0}

    def others_busy(self):
        return load["others"]() if callable(load["others"]) else load["others"]

    monkeypatch.setattr(runtime_threads, "_usable_cores", lambda: 4)
    monkeypatch.setattr(runtime_threads._LoadMeter, "others_busy", others_busy)
    monkeypatch.setattr(runtime_threads._LoadMeter, "age", lambda self: load["age"])
    return load


@pytest.fixture
def threads_in_game(monkeypatch):
    """The number of torch threads at each encoder update of the games played."""
    seen = []
    step = AdversarialGame._encoder_step

    def recording(self, X_train):
        seen.append(torch.get_num_threads())
        return step(self, X_train)

    monkeypatch.setattr(AdversarialGame, "_encoder_step", recording)
    return seen


@pytest.fixture
def caller_threads():
    """Let the test set torch's threads; put back what they were."""
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize(
    ("others", "caller", "expected"),
    [
        (0.0, 4, 4),  # an idle machine: every core
        (1.0, 4, 3),  # one busy process: its core is left alone
        (1.4, 4, 3),  # less than half a core more is still free
        (1.6, 4, 2),
        (3.9, 4, 1),  # never fewer than one
        (0.0, 2, 2),  # never more than the caller allows
    ],
)
def test_a_fit_uses_the_free_cores_up_to_the_callers_threads(
    cores, threads_in_game, caller_threads, others, caller, expected
):
    cores["others"] = others
    torch.set_num_threads(caller)
    PICA(**LARGE).fit(X)
    assert set(threads_in_game) == {expected}
    assert torch.get_num_threads() == caller  # given back


def test_small_work_uses_one_thread(cores, threads_in_game, caller_threads):
    torch.set_num_threads(4)
    # 1 component x 1 start x 8 units x 540 rows: a thread would have nothing to share
    PICA(1, n_init=1, critic_hidden=8, max_iter=20, random_state=0).fit(X)
    assert set(threads_in_game) == {1}


def test_ica_takes_threads_for_its_entropy_search(cores, caller_threads, monkeypatch):
    """The critic of two sources is small work, the start's search is not: on 1,000 rows it
    sorts grids of 1.15 million values."""
    seen = []
    best_angles = spacings._best_angles
    monkeypatch.setattr(
        spacings,
        "_best_angles",
        lambda *args: seen.append(torch.get_num_threads()) or best_angles(*args),
    )
    torch.set_num_threads(4)
    sources = np.random.default_rng(0).laplace(size=(1000, 2))
    ICA(random_state=0).fit(sources @ np.array([[1.0, 0.5], [0.5, 1.0]]))
    assert seen and set(seen) == {4}


def test_a_fit_follows_a_load_that_starts_while_it_runs(cores, threads_in_game, caller_threads):
    # two busy processes start after the fifth update
    cores["others"] = lambda: 0.0 if len(threads_in_game) < 5 else 2.0
    torch.set_num_threads(4)
    PICA(**LARGE).fit(X)
    assert threads_in_game[0] == 4
    assert threads_in_game[-1] == 2


def test_a_fit_starts_on_one_thread_until_it_has_measured_the_load(cores, caller_threads):
    torch.set_num_threads(4)
    cores["age"] = 1.0  # a load may have started since the last reading
    with runtime_threads.FitThreads(10**9) as threads:
        assert threads.n_threads == 1
        threads.rebalance()  # the meter's first interval: four cores free
        assert threads.n_threads == 4
    # work in chunks, which any thread may take, trusts a reading up to STALE_S old
    with runtime_threads.FitThreads(10**9, current_s=runtime_threads.STALE_S) as threads:
        assert threads.n_threads == 4
    cores["age"] = runtime_threads.STALE_S + 1.0
    with runtime_threads.FitThreads(10**9, current_s=runtime_threads.STALE_S) as threads:
        assert threads.n_threads == 1


def test_a_load_that_began_since_the_last_reading_never_meets_two_threads(
    monkeypatch, threads_in_game, caller_threads
):
    """A busy process starting between two fits: the second fit computes on one thread from
    its first operation (it used to start on two, the last reading read an idle machine)."""
    monkeypatch.setattr(runtime_threads, "_usable_cores", lambda: 2)
    applied = []
    apply = runtime_threads.FitThreads._apply
    monkeypatch.setattr(
        runtime_threads.FitThreads, "_apply", lambda self, n: applied.append(n) or apply(self, n)
    )
    torch.set_num_threads(2)
    PICA(**LARGE).fit(X)
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)
        applied.clear(), threads_in_game.clear()
        PICA(**LARGE).fit(X)
    finally:
        hog.kill()
        hog.wait()
    assert set(applied) == {1}
    assert set(threads_in_game) == {1}


def test_training_threads_fixes_the_number_whatever_the_load(
    cores, threads_in_game, caller_threads
):
    cores["others"] = 3.0
    torch.set_num_threads(2)
    with training_threads(3):
        PICA(**LARGE).fit(X)
    assert set(threads_in_game) == {3}
    assert torch.get_num_threads() == 2
    threads_in_game.clear()
    with training_threads(3), training_threads(None):  # None: the automatic choice again
        PICA(**LARGE).fit(X)
    assert set(threads_in_game) == {1}


def test_training_threads_gives_the_same_model_under_any_load(cores):
    models = []
    for others in (0.0, 3.0):
        cores["others"] = others
        with training_threads(2):
            models.append(PICA(**LARGE).fit(X).components_)
    np.testing.assert_array_equal(*models)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_training_threads_rejects_what_is_not_a_count(bad):
    with pytest.raises(ValueError, match="n_threads must be a positive int or None"):
        with training_threads(bad):
            pass


def test_the_callers_blas_threads_are_given_back(cores):
    before = [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]
    cores["others"] = 3.0  # the fit limits the BLAS to one thread
    PICA(**LARGE).fit(X)
    DependenceScorer("dcor").score(X[:200])
    after = [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]
    assert after == before


def test_one_thread_limits_the_blas_inside_and_gives_it_back():
    def blas():
        return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]

    before = blas()
    with runtime_threads.one_thread():
        assert set(blas()) == {1}
    assert blas() == before


def test_one_thread_lists_the_libraries_again_after_an_import(monkeypatch):
    listed = runtime_threads._controller()
    assert runtime_threads._controller() is listed  # no import since: the same list
    monkeypatch.setitem(sys.modules, "a_module_with_its_own_blas", object())
    assert runtime_threads._controller() is not listed


def test_fits_side_by_side_in_one_process_share_the_free_cores(cores, caller_threads):
    torch.set_num_threads(4)
    with runtime_threads.FitThreads(10**9) as first:
        with runtime_threads.FitThreads(10**9) as second:
            assert second.n_threads == 2  # four free cores, two fits
        assert first.n_threads == 4
        assert torch.get_num_threads() == 4


def test_the_meter_sees_a_busy_process():
    meter = runtime_threads._LoadMeter()
    assert meter.others_busy() is None  # one reading: no interval yet
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        meter.others_busy()  # the interval from the last reading: the hog starting
        time.sleep(0.3)
        assert meter.others_busy() > 0.5
        meter.restart()
        assert meter.others_busy() is None  # too short an interval to say
    finally:
        hog.kill()
        hog.wait()
