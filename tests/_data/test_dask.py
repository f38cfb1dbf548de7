"""A grid search over a Pipeline with PICA on a Dask cluster (two local worker processes over
loopback): the same scores as in sequence, one torch thread per worker thread, and no
slowdown from Dask's allocator settings."""

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_adm import ICA, PICA, DependenceScorer, NonlinearPICA
from sklearn_adm.datasets import make_pca_vs_pica

distributed = pytest.importorskip("distributed")
dask = pytest.importorskip("dask")
joblib = pytest.importorskip("joblib")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    with cluster, distributed.Client(cluster) as client:
        yield client


def _worker_state():
    """What a task sees inside a worker: torch's threads, and whether Dask's allocator
    setting is there for the fit to lift."""
    import os

    import torch

    return torch.get_num_threads(), os.environ.get("MALLOC_TRIM_THRESHOLD_")


# 20 updates a fit: the grid compares scores, it does not need converged fits
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_grid_search_on_a_dask_cluster_scores_as_in_sequence(client):
    X, _ = make_pca_vs_pica(600, random_state=0)
    searches = {}
    for backend in ("sequential", "dask"):
        search = GridSearchCV(
            make_pipeline(StandardScaler(), PICA(n_components=2, max_iter=20, random_state=0)),
            {"pica__dependence_weight": [0.0, 1.0]},
            scoring=DependenceScorer(),
            cv=2,
            n_jobs=1 if backend == "sequential" else -1,
        )
        with joblib.parallel_backend(backend):
            searches[backend] = search.fit(X)
    np.testing.assert_array_equal(
        searches["sequential"].cv_results_["mean_test_score"],
        searches["dask"].cv_results_["mean_test_score"],
    )


def test_each_worker_thread_runs_torch_on_one_thread(client):
    for threads, trim in client.run(_worker_state).values():
        assert threads == 1  # two workers of one thread on two cores: no oversubscription
        assert trim is not None  # the setting the allocator lifts during a fit


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize(
    "make_model",
    [
        lambda: PICA(4, max_iter=20, random_state=0),
        lambda: ICA(4, max_iter=20, random_state=0),
        lambda: NonlinearPICA(2, hidden_layer_sizes=(8,), max_iter=20, random_state=0),
    ],
    ids=["PICA", "ICA", "NonlinearPICA"],
)
def test_a_dask_array_whose_chunks_live_on_the_workers_fits_as_in_this_process(
    client, monkeypatch, short_warmup, make_model
):
    """The chunks are persisted on the two workers: the moments are summed there (only
    ``d x d`` sums come back) and the game reads windows of rows; the model is the one
    fitted from the same array in this process, and so are its transform and its
    ``partial_fit`` (a chunk a batch). The pool is shrunk so that windows stream."""
    from sklearn_adm import training_threads
    from sklearn_adm._data import streaming
    from sklearn_adm.datasets import make_embedding_like

    da = pytest.importorskip("dask.array")
    monkeypatch.setattr(streaming, "_POOL_ROWS", 256)
    monkeypatch.setattr(streaming, "_WINDOW_ROWS", 128)
    X = make_embedding_like(1200, 16, random_state=0)[0].astype(np.float32)
    on_workers = da.from_array(X, chunks=(150, 16)).persist()
    assert len(distributed.futures_of(on_workers)) == 8  # one chunk a future, on the workers
    with training_threads(1):
        remote = make_model().fit(on_workers)
        assert remote.n_iter_ > 0  # the game played, on windows read from the workers
        with dask.config.set(scheduler="threads"):
            local = make_model().fit(da.from_array(X, chunks=(150, 16)))
    np.testing.assert_allclose(remote.transform(X), local.transform(X), rtol=1e-5, atol=1e-5)
    Z = remote.transform(on_workers)
    assert len(Z.chunks[0]) == 8
    np.testing.assert_allclose(Z.compute(), remote.transform(X), rtol=1e-5, atol=1e-6)
    streamed = make_model().partial_fit(on_workers[:450])
    expected = make_model().partial_fit(X[:150]).partial_fit(X[150:300])
    expected.partial_fit(X[300:450])
    np.testing.assert_array_equal(streamed.transform(X), expected.transform(X))
