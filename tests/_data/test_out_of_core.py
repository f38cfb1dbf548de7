"""Memory-mapped and Dask arrays: read a block at a time, never whole, with the results of
arrays in memory. The files are a few MB; the pool and windows of the stream are shrunk so
that the stream, not a pool holding every row, feeds the game."""

import sys
import time

import numpy as np
import pytest
from sklearn.decomposition import PCA

from sklearn_adm import ICA, PICA, DependenceScorer, NonlinearPICA
from sklearn_adm._data import chunked, streaming
from sklearn_adm._data.chunked import ChunkedArray, Moments, read_rows
from sklearn_adm.datasets import make_embedding_like, make_pca_vs_pica
from tests._helpers import amari_error

da = pytest.importorskip("dask.array")


def _memmap(tmp_path, X, name="X.npy"):
    path = tmp_path / name
    np.save(path, X)
    return np.load(path, mmap_mode="r")


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 100 rows, sums over 64, a pool of 512 rows in windows of 64."""
    monkeypatch.setattr(chunked, "_BLOCK_BYTES", 100 * 8 * 3)
    monkeypatch.setattr(chunked, "_SUM_ROWS", 64)
    monkeypatch.setattr(streaming, "_POOL_ROWS", 512)
    monkeypatch.setattr(streaming, "_WINDOW_ROWS", 64)


@pytest.fixture(scope="module")
def paper_example():
    X, _ = make_pca_vs_pica(5000, random_state=0)
    return X


def test_streamed_moments_equal_numpy_and_dask(tmp_path, small_blocks):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((1000, 3)) @ rng.standard_normal((3, 3)) + [5.0, -2.0, 1e3]
    for source in (_memmap(tmp_path, X), da.from_array(X, chunks=(130, 2))):
        moments = ChunkedArray(source).moments
        assert moments.n == 1000
        np.testing.assert_allclose(moments.mean * moments.unit, X.mean(axis=0), rtol=1e-12)
        covariance = moments.covariance(ddof=1) * moments.unit**2
        np.testing.assert_allclose(covariance, np.cov(X, rowvar=False), rtol=1e-10)


def test_moments_of_rows_of_very_different_magnitudes_stay_finite():
    """Blocks are summed in units of their own largest entry and merged in the larger: rows
    near 1e200, whose squares overflow float64, and rows near 1e-200 add up."""
    rng = np.random.default_rng(0)
    big, small = 1e200 * rng.standard_normal((50, 2)), 1e-200 * rng.standard_normal((50, 2))
    moments = Moments.of(big).merge(Moments.of(small))
    expected = np.cov(np.r_[big / 1e200, small / 1e200], rowvar=False, ddof=0)
    np.testing.assert_allclose(moments.covariance() * (moments.unit / 1e200) ** 2, expected)


def test_nan_in_a_late_block_names_its_row_and_fits_nothing(tmp_path, small_blocks):
    X = np.random.default_rng(0).standard_normal((1000, 3))
    X[873, 1] = np.nan
    for source in (_memmap(tmp_path, X), da.from_array(X, chunks=(250, 3))):
        pica = PICA(2)
        with pytest.raises(ValueError, match=r"NaN or infinity: row 873 \(in the block of rows"):
            pica.fit(source)
        assert not hasattr(pica, "components_")


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_bad_chunked_input_is_refused_clearly(tmp_path):
    X = np.random.default_rng(0).standard_normal((100, 3))
    unknown = da.from_array(X, chunks=(25, 3))
    unknown = unknown[unknown[:, 0] > -10]  # a filter leaves the chunk sizes unknown
    with pytest.raises(ValueError, match="unknown chunk sizes.*compute_chunk_sizes"):
        PICA(2).fit(unknown)
    with pytest.raises(ValueError, match="unknown chunk sizes"):
        DependenceScorer().score(unknown)
    with pytest.raises(TypeError, match="float32 or float64, got dtype int32"):
        PICA(2).fit(_memmap(tmp_path, X.astype(np.int32)))
    with pytest.raises(ValueError, match="Expected a 2D memory-mapped array"):
        PICA(2).fit(_memmap(tmp_path, X[:, 0], "one.npy"))
    pica = PICA(2, max_iter=10).fit(X)
    with pytest.raises(ValueError, match="X has 2 features, but PICA is expecting 3"):
        pica.transform(da.from_array(X[:, :2], chunks=(50, 2)))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_reading_a_memmap_leaves_its_pages_with_the_system(tmp_path):
    """Pages of the file that a read touched are handed back: a pass over a 48 MB file
    keeps well under that in the process's resident file pages."""

    def resident_file_kb():
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("RssFile"))

    X = _memmap(tmp_path, np.ones((125_000, 48)))
    before = resident_file_kb()
    ChunkedArray(X).moments  # noqa: B018 (the pass)
    read_rows(X, np.arange(0, 125_000, 7))
    assert resident_file_kb() - before < 8_000


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_pica_streamed_from_a_memmap_finds_the_papers_factors(
    tmp_path, small_blocks, paper_example
):
    """The paper's example (x1, x3 independent; x2 a function of x1), streamed through a pool
    of 512 rows refilled from windows of 64: PICA keeps x1 and x3 as in memory, explains the
    same variance, and a second fit with the same seed gives the same model."""
    X = paper_example.astype(np.float32)
    memmap = _memmap(tmp_path, X)
    in_memory = PICA(2, random_state=0).fit(X)
    streamed = PICA(2, random_state=0).fit(memmap)
    np.testing.assert_array_equal(np.abs(streamed.components_).argmax(axis=1), [0, 2])
    assert (
        np.abs(streamed.explained_variance_ratio_.sum() - in_memory.explained_variance_ratio_.sum())
        < 0.01
    )
    again = PICA(2, random_state=0).fit(memmap)
    np.testing.assert_array_equal(again.components_, streamed.components_)
    np.testing.assert_allclose(streamed.mean_, X.mean(axis=0), atol=1e-5)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_transform_of_a_dask_array_is_lazy_and_equals_numpys(paper_example):
    X = paper_example.astype(np.float32)
    pica = PICA(2, max_iter=20, random_state=0).fit(X)
    chunks = da.from_array(X, chunks=(1200, 3))
    Z = pica.transform(chunks)
    assert isinstance(Z, da.Array) and Z.chunks == (chunks.chunks[0], (2,))
    assert Z.dtype == np.float32
    np.testing.assert_allclose(Z.compute(), pica.transform(X), rtol=1e-6)
    back = pica.inverse_transform(Z)
    assert isinstance(back, da.Array)
    np.testing.assert_allclose(back.compute(), pica.inverse_transform(pica.transform(X)), rtol=1e-5)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_fit_transform_of_a_memmap_is_computed_block_by_block(
    tmp_path, small_blocks, paper_example
):
    memmap = _memmap(tmp_path, paper_example)
    pica = PICA(2, max_iter=20, random_state=0)
    Z = pica.fit_transform(memmap)
    assert type(Z) is np.ndarray and Z.shape == (5000, 2)
    np.testing.assert_allclose(Z, pica.transform(paper_example), rtol=1e-10)


def test_shares_of_variance_and_mle_resolve_as_pca_on_a_memmap(tmp_path, short_warmup):
    X = make_embedding_like(600, 24, random_state=0)[0]
    memmap = _memmap(tmp_path, X)
    for n_components in (0.6, 0.9, "mle"):
        expected = PCA(n_components, svd_solver="full").fit(X).n_components_
        pica = PICA(n_components, max_iter=1, random_state=0)
        with pytest.warns():  # one update: not converged
            pica.fit(memmap)
        assert pica.n_components_ == expected


def test_scorer_reads_only_its_sample_of_a_chunked_array(tmp_path):
    """``max_samples`` rows drawn as from an array in memory: the same score, and from a
    Dask array only the drawn rows are read."""
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, size=20_000)
    Z = np.c_[x, x**2, rng.normal(size=20_000)]
    scorer = DependenceScorer(max_samples=500, random_state=0)
    expected = scorer.per_feature(Z)
    np.testing.assert_array_equal(scorer.per_feature(_memmap(tmp_path, Z)), expected)
    np.testing.assert_array_equal(scorer.per_feature(da.from_array(Z, chunks=(1000, 3))), expected)
    test = DependenceScorer("pearson", max_samples=500, random_state=0)
    in_memory = test.test(Z[:, :1], Z[:, 1:])
    chunked = test.test(da.from_array(Z[:, :1], chunks=1000), _memmap(tmp_path, Z[:, 1:], "Y.npy"))
    assert (chunked.statistic, chunked.pvalue) == (in_memory.statistic, in_memory.pvalue)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_ica_and_nonlinear_pica_fit_chunked_arrays(tmp_path, small_blocks):
    """ICA unmixes Laplace sources from a streamed memmap (its start fitted on a sample) as
    well as in memory; NonlinearPICA fits a Dask array and transforms it lazily."""
    rng = np.random.default_rng(0)
    S = rng.laplace(size=(3000, 3))
    A = rng.standard_normal((3, 3))
    X = S @ A.T
    streamed = ICA(random_state=0).fit(_memmap(tmp_path, X))
    in_memory = ICA(random_state=0).fit(X)
    assert amari_error(streamed.components_, A) < amari_error(in_memory.components_, A) + 0.5
    chunks = da.from_array(X, chunks=(700, 3))
    nonlinear = NonlinearPICA(2, hidden_layer_sizes=(8,), max_iter=20, random_state=0).fit(chunks)
    Z = nonlinear.transform(chunks)
    assert isinstance(Z, da.Array)
    np.testing.assert_allclose(Z.compute(), nonlinear.transform(X), rtol=1e-5)


def test_learned_estimate_streams_every_row_of_a_large_chunked_array(
    tmp_path, small_blocks, monkeypatch
):
    """With ``max_samples=None`` the critic trains on windows streamed from the file and is
    read on held-out rows drawn from it: x and x^2 read as dependent, the independent column
    as independent, as the same estimate reads them in memory (0.95, 0.94 and 0.001 streamed
    through this test's small pool, 0.996, 0.996 and 0.001 in memory); a test finds them."""
    from sklearn_adm.independence import _scorer

    monkeypatch.setattr(_scorer, "_IN_MEMORY_ROWS", 1000)
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, size=4000)
    Z = np.c_[x, x**2, rng.normal(size=4000)]
    scorer = DependenceScorer("adm", max_samples=None, random_state=0)
    streamed = scorer.per_feature(_memmap(tmp_path, Z))
    in_memory = scorer.per_feature(Z)
    assert streamed[0] > 0.9 and streamed[1] > 0.9 and streamed[2] < 0.02
    np.testing.assert_allclose(streamed, in_memory, atol=0.1)
    test = DependenceScorer(
        "adm", max_samples=None, random_state=0, critic_params={"max_iter": 200}
    )
    result = test.test(da.from_array(Z, chunks=(500, 3)), n_permutations=19)
    # the dependent columns beat every permutation; the independent one reads its floor
    np.testing.assert_array_equal(result.pvalue[:2], 1 / 20)
    assert result.statistic[2] < 0.02


def test_arrays_in_memory_are_scaled_and_summed_a_block_at_a_time(monkeypatch):
    """A float32 array in memory is never copied whole in float64: scaling, scaled rows and
    the moments the fitted attributes come from are computed a block at a time, and equal
    those of one block."""
    from sklearn_adm._data import scaling
    from sklearn_adm._data.chunked import code_moments
    from sklearn_adm.decomposition._base import scaled_rows

    X = make_embedding_like(1000, 12, random_state=0)[0].astype(np.float32) * 100 + 7
    rows = np.arange(0, 1000, 3)
    unmixing = np.random.default_rng(0).standard_normal((12, 4))
    whole = (
        scaling.fit_scaling(X, False, rows=rows),
        scaled_rows(X, rows, X.mean(axis=0), 2.0, "cpu"),
        code_moments(X, unmixing, 2.0),
    )
    monkeypatch.setattr(scaling, "BLOCK_ROWS", 64)
    blocked = (
        scaling.fit_scaling(X, False, rows=rows),
        scaled_rows(X, rows, X.mean(axis=0), 2.0, "cpu"),
        code_moments(X, unmixing, 2.0),
    )
    np.testing.assert_allclose(blocked[0][0], whole[0][0], rtol=1e-12)
    np.testing.assert_allclose(blocked[0][1], whole[0][1], rtol=1e-12)
    np.testing.assert_array_equal(blocked[1].numpy(), whole[1].numpy())
    for name in ("mean", "cross", "gram", "total"):
        np.testing.assert_allclose(getattr(blocked[2], name), getattr(whole[2], name), rtol=1e-10)


@pytest.mark.parametrize("Estimator", [PICA, ICA, NonlinearPICA])
def test_partial_fit_of_a_chunked_array_takes_its_blocks_as_batches(tmp_path, Estimator):
    """A memory map or Dask array given to ``partial_fit`` is never read whole: each block of
    rows (a chunk of 700; the last, of one row, joins the one before) is a batch, and the model
    is the one fitted on those batches in memory, to the bit."""
    X = make_embedding_like(2801, 6, random_state=0)[0].astype(np.float32)
    in_batches = Estimator(3, random_state=0)
    for start, stop in [(0, 700), (700, 1400), (1400, 2100), (2100, 2801)]:
        in_batches.partial_fit(X[start:stop])
    chunked = Estimator(3, random_state=0).partial_fit(da.from_array(X, chunks=(700, 6)))
    np.testing.assert_array_equal(chunked.transform(X), in_batches.transform(X))
    assert chunked.n_iter_ == in_batches.n_iter_


def test_partial_fit_of_a_memmap_reads_it_a_block_at_a_time(tmp_path, monkeypatch):
    X = make_embedding_like(1000, 6, random_state=0)[0]
    monkeypatch.setattr(chunked, "_BLOCK_BYTES", 300 * 6 * 8)  # blocks of 300 rows
    seen = []
    pica = PICA(2, random_state=0)
    monkeypatch.setattr(pica, "_partial_fit", lambda batch: seen.append(len(batch)))
    pica.partial_fit(_memmap(tmp_path, X))
    assert seen == [300, 300, 300, 100]


@pytest.mark.usefixtures("short_warmup")
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_from_array_over_a_memmap_warns_once_with_the_construction_that_avoids_the_copy(
    tmp_path,
):
    """dask.array.from_array copies a memory map into memory (dask >= 2024.12): the fit says
    so, once for the array, and shows a construction that reads the file in place, which
    fits to the same model without the warning."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    X = make_embedding_like(600, 4, random_state=0)[0].astype(np.float32)
    path = tmp_path / "X.npy"
    np.save(path, X)
    copied = da.from_array(np.load(path, mmap_mode="r"), chunks=(200, 4))
    pica = PICA(2, max_iter=5, random_state=0)
    with pytest.warns(UserWarning, match="copies its input since dask 2024.12.0") as record:
        pica.fit(copied)
        pica.transform(copied)
        DependenceScorer("pearson").score(copied)
    assert sum("copies its input" in str(w.message) for w in record) == 1
    namespace = {"path": str(path)}
    exec(chunked.NPY_AS_DASK.replace("\n    ", "\n").strip(), namespace)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        warnings.simplefilter("ignore", ConvergenceWarning)  # five updates
        in_place = PICA(2, max_iter=5, random_state=0).fit(namespace["X"])
        in_memory = da.from_array(X, chunks=(200, 4))  # an array in memory: nothing to say
        PICA(2, max_iter=5, random_state=0).fit(in_memory)
    np.testing.assert_array_equal(in_place.components_, pica.components_)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_zarr_and_npy_stack_arrays_fit_transform_and_score_as_in_memory(tmp_path):
    """The two on-disk layouts Dask reads in place: the same model, transform and score as
    the array in memory."""
    pytest.importorskip("zarr")
    X = make_embedding_like(1200, 5, random_state=0)[0].astype(np.float32)
    arrays = {"in memory": da.from_array(X, chunks=(400, 5))}
    da.to_npy_stack(tmp_path / "stack", arrays["in memory"])
    arrays["npy stack"] = da.from_npy_stack(tmp_path / "stack")
    arrays["in memory"].to_zarr(str(tmp_path / "X.zarr"))
    arrays["zarr"] = da.from_zarr(str(tmp_path / "X.zarr"))
    models = {name: PICA(2, max_iter=10, random_state=0).fit(A) for name, A in arrays.items()}
    expected = models["in memory"]
    for name, A in arrays.items():
        np.testing.assert_array_equal(models[name].components_, expected.components_)
        np.testing.assert_allclose(models[name].transform(A).compute(), expected.transform(X))
        assert DependenceScorer().score(A) == DependenceScorer().score(X)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_zarr_array_is_read_a_whole_chunk_at_a_time(
    tmp_path, small_blocks, paper_example, monkeypatch
):
    """Zarr decodes a whole chunk to read any of its rows, at two to three times its size
    while it lasts: a fit reads one chunk at a time, never two at once; its moments and
    held-out rows come from one pass over the chunks, in order; the game's reader takes
    eight windows from each chunk it reads. The fit keeps the paper's factors x1 and x3 as
    the same fit from an npy stack (one read a window) does."""
    pytest.importorskip("zarr")
    X = paper_example.astype(np.float32)
    da.from_array(X, chunks=(500, 3)).to_zarr(str(tmp_path / "X.zarr"))
    da.to_npy_stack(tmp_path / "stack", da.from_array(X, chunks=(500, 3)))
    reads, reading, read = [], [], ChunkedArray.read

    def counted_read(self, start, stop):
        reading.append(start)
        assert len(reading) == 1, "two reads at once"
        reads.append((start, stop))
        try:
            return read(self, start, stop)
        finally:
            reading.pop()

    monkeypatch.setattr(ChunkedArray, "read", counted_read)
    fits = {}
    for name, array in [
        ("zarr", da.from_zarr(str(tmp_path / "X.zarr"))),
        ("npy stack", da.from_npy_stack(tmp_path / "stack")),
    ]:
        assert ChunkedArray(array).decoded_rows == (500 if name == "zarr" else None)
        reads.clear()
        fits[name] = PICA(2, max_iter=30, random_state=0).fit(array)
        if name == "zarr":
            chunks = [(start, start + 500) for start in range(0, 5000, 500)]
            assert reads[:10] == chunks  # the moments and the held-out rows: one pass
            assert len(reads) > 10 and set(reads) <= set(chunks)  # then the windows
        else:
            assert reads and all(stop - start == 64 for start, stop in reads)
    for pica in fits.values():
        np.testing.assert_array_equal(np.abs(pica.components_).argmax(axis=1), [0, 2])
    ratio = [pica.explained_variance_ratio_.sum() for pica in fits.values()]
    assert abs(ratio[0] - ratio[1]) < 0.01


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_zarr_transform_decodes_one_chunk_at_a_time_on_any_number_of_threads(
    tmp_path, monkeypatch
):
    """A transform's compute on Dask's threads reads a Zarr chunk only once the chunk
    before is done (two chunks decoded at once would take four to six times a chunk): the
    same numbers as in memory; an npy stack, whose chunks are views of files, maps its
    chunks side by side."""
    pytest.importorskip("zarr")
    X = make_embedding_like(2000, 4, random_state=0)[0].astype(np.float32)
    da.from_array(X, chunks=(250, 4)).to_zarr(str(tmp_path / "X.zarr"))
    model = PICA(2, max_iter=5, random_state=0).fit(X)
    active, most, in_turn = [], [], chunked._in_turn

    def counted(rows, function, before):
        active.append(rows.start)
        most.append(len(active))
        time.sleep(0.01)  # long enough for another thread to start a read, were it allowed
        try:
            return in_turn(rows, function, before)
        finally:
            active.remove(rows.start)

    monkeypatch.setattr(chunked, "_in_turn", counted)
    Z = model.transform(da.from_zarr(str(tmp_path / "X.zarr"))).compute(num_workers=4)
    assert len(most) == 8 and max(most) == 1
    np.testing.assert_allclose(Z, model.transform(X), rtol=1e-6)


@pytest.mark.usefixtures("short_warmup")
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_transform_reads_a_large_chunk_in_parts(tmp_path, monkeypatch):
    """A chunk of 1,000 rows is transformed 100 rows at a time (a float64 copy of 2,400
    bytes each), so that a transform's temporaries do not grow with the chunks: the same
    numbers as in memory."""
    X = make_embedding_like(1000, 3, random_state=0)[0]
    model = NonlinearPICA(2, hidden_layer_sizes=(8,), max_iter=5, random_state=0).fit(X)
    monkeypatch.setattr(chunked, "_MAP_BYTES", 100 * 3 * 8)
    sizes, transform = [], model._transform
    monkeypatch.setattr(
        model, "_transform", lambda rows: sizes.append(len(rows)) or transform(rows)
    )
    for source in (da.from_array(X, chunks=(1000, 3)), _memmap(tmp_path, X)):
        sizes.clear()
        Z = model.transform(source)
        Z = Z.compute() if hasattr(Z, "compute") else Z
        assert max(sizes) == 100 and sum(sizes) >= 1000
        np.testing.assert_allclose(Z, transform(X), rtol=1e-12)


@pytest.mark.usefixtures("short_warmup")
def test_a_transform_after_partial_fit_ships_the_fitted_model_not_the_stream():
    """``partial_fit`` keeps its open game (and the rows it holds) to go on; the tasks of a
    transform of a Dask array carry the fitted attributes only."""
    import pickle

    X = make_embedding_like(20_000, 8, random_state=0)[0].astype(np.float32)
    pica = PICA(2, random_state=0, max_iter=5).partial_fit(X)
    chunks = da.from_array(X, chunks=(5000, 8))
    Z = pica.transform(chunks)
    graph = pickle.dumps(dict(Z.__dask_graph__()))
    stream = pickle.dumps(pica._stream)
    assert len(stream) > 200_000  # the game and its held-out rows
    assert len(graph) - X.nbytes < 100_000  # the data, and four copies of a small model
    np.testing.assert_allclose(Z.compute(), pica.transform(X), rtol=1e-6)


def test_a_large_dask_chunk_is_split_into_batches_of_at_most_64_mb(monkeypatch):
    """A chunk larger than ``_BLOCK_BYTES`` (here 400 x 3 float64) is read once and given to
    ``partial_fit`` in equal parts of at most that size."""
    monkeypatch.setattr(chunked, "_BLOCK_BYTES", 400 * 3 * 8)
    X = da.from_array(np.random.default_rng(0).normal(size=(2001, 3)), chunks=(1000, 3))
    assert [len(block) for block in ChunkedArray(X).blocks()] == [334, 333, 333, 334, 334, 333]
