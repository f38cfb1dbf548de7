"""Data larger than memory: memory-mapped NumPy arrays and Dask arrays, read in blocks of rows.

An estimator given such an array never holds it whole. Its moments (mean, covariance, largest
magnitude) come from one pass over the blocks (:meth:`ChunkedArray.moments`; on a Dask array the
pass runs where the chunks live, and only ``d x d`` sums travel), the game draws its minibatches
from rows read a window at a time (:mod:`sklearn_adm._data.streaming`), and ``transform`` maps the
blocks one by one (:meth:`ChunkedArray.map_rows`). No torch here: a fitted model transforms without
it.

Pages of a memory-mapped file that a read touched count in the process's resident memory for
as long as they stay mapped; each read here hands them back (``madvise(MADV_DONTNEED)``: the
file stays in the system's page cache, the process no longer holds it), so reading a file of
any size costs the process the block it is reading.
"""

import mmap
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from sklearn.utils.validation import _check_feature_names, _check_n_features

from .._runtime.warnings import warn
from .scaling import magnitude, merge_moments, row_blocks

#: bytes of a block of a memory-mapped array read at a time
_BLOCK_BYTES = 64 * 2**20
#: bytes of a float64 copy of the rows that a function of ``map_rows`` reads at a time: the
#: temporaries of a transform (a scaled copy, an MLP's hidden layers) stay this small on
#: each thread that computes a chunk, whatever the chunks' size
_MAP_BYTES = 16 * 2**20
#: rows whose cross products are summed in float64 at a time (a float64 copy of this many
#: rows is the largest temporary of the pass)
_SUM_ROWS = 8_192
#: floating dtypes read as they are; others are refused (a cast of the whole file would be
#: the copy that reading out of core avoids)
_FLOAT_DTYPES = (np.float32, np.float64)


def is_chunked(X):
    """Whether ``X`` is read block by block: a memory-mapped array or a Dask array."""
    return isinstance(X, np.memmap) or _is_dask_array(X)


def _is_dask_array(X):
    # without importing dask, which a NumPy user need not have
    return type(X).__module__.split(".")[:2] == ["dask", "array"] and hasattr(X, "chunks")


def _decodes_here(X, decoded_rows):
    """Whether reading ``X``'s chunks decodes them whole in this process: a storage that
    decodes whole chunks (``decoded_rows``), computed by Dask's threaded or synchronous
    scheduler, not on a cluster's workers. Such reads go a chunk at a time: decoding a Zarr
    chunk takes two to three times its size while it lasts."""
    import dask.local
    import dask.threaded
    from dask.base import get_scheduler

    local = get_scheduler(collections=[X]) in (dask.threaded.get, dask.local.get_sync)
    return decoded_rows is not None and local


#: the construction of a Dask array over a ``.npy`` file that reads it where each chunk is
#: computed, without a copy (the guide's "Data beyond memory" shows it too)
NPY_AS_DASK = """\
    import dask, dask.array as da, numpy as np

    def rows(path, start, stop):
        return np.load(path, mmap_mode="r")[start:stop]

    n_rows, n_features = np.load(path, mmap_mode="r").shape
    X = da.concatenate([
        da.from_delayed(dask.delayed(rows)(path, start, min(start + 100_000, n_rows)),
                        (min(start + 100_000, n_rows) - start, n_features), np.float32)
        for start in range(0, n_rows, 100_000)
    ])"""

#: the Dask arrays already warned about (by their graph layer's name): a warning once each
_warned_copies = set()


def _graph_objects(X):
    """The objects a Dask array's graph holds as data: the values of its materialised
    layers (``from_array``'s source) and the arguments of its blockwise layers (the source,
    where ``from_array`` inlined it)."""
    for name, layer in X.__dask_graph__().layers.items():
        values = layer.values() if hasattr(layer, "mapping") else ()
        for value in [*values, *(arg for arg, _ in getattr(layer, "indices", ()))]:
            yield name, value


def warn_if_copied_memory_map(X):
    """Warn, once per array, where the Dask array ``X`` holds an in-memory copy of a memory
    map: ``dask.array.from_array`` copies its input since dask 2024.12.0 (dask PR #11524,
    issue #11850), so ``from_array(np.load(path, mmap_mode="r"))`` holds the whole file in
    memory before this package sees it. The copy keeps no trace of the file (its
    ``filename`` is None), so the file cannot be read in its place: the warning shows the
    construction that avoids the copy."""
    name, copy = next(
        (
            (name, value)
            for name, value in _graph_objects(X)
            if isinstance(value, np.memmap) and value.filename is None
        ),
        (None, None),
    )
    if copy is None or name in _warned_copies:
        return
    import dask

    _warned_copies.add(name)
    warn(
        f"This Dask array holds a copy of a memory-mapped array in memory "
        f"({copy.nbytes / 1e9:.2f} GB): dask.array.from_array copies its input since "
        f"dask 2024.12.0 (installed: {dask.__version__}). Pass the memory map itself "
        f"(np.load(path, mmap_mode='r')), which is read a block at a time, or build the "
        f"Dask array so that each chunk reads the file where it is computed:\n"
        f"{NPY_AS_DASK}"
    )


def storage_chunk_rows(X):
    """Rows of the chunks that the storage under the Dask array ``X`` decodes whole to read
    any of their rows (a Zarr or HDF5 array: its ``chunks``), or None where a slice of
    ``X`` reads only its own rows (a memory map, an array in memory)."""
    for _, value in _graph_objects(X):
        chunks = getattr(value, "chunks", None)
        if isinstance(value, np.ndarray) or _is_dask_array(value) or not isinstance(chunks, tuple):
            continue
        if len(chunks) == 2 and isinstance(chunks[0], int) and chunks[0] > 0:
            return chunks[0]
    return None


def release_pages(array):
    """Hand back to the system the pages of a memory-mapped file under ``array``'s data (a
    view of a :class:`numpy.memmap`, at any depth), so that having read them does not keep
    them in this process's resident memory. Other arrays are left alone."""
    file_map = getattr(array, "base", None)
    while file_map is not None and not isinstance(file_map, mmap.mmap):
        file_map = getattr(file_map, "base", None)  # a memmap's last base is its mmap
    if file_map is None or array.size == 0 or not hasattr(mmap, "MADV_DONTNEED"):
        return
    start = np.frombuffer(file_map, dtype=np.uint8).__array_interface__["data"][0]
    low, high = _byte_bounds(array)
    first = (low - start) // mmap.PAGESIZE * mmap.PAGESIZE
    file_map.madvise(mmap.MADV_DONTNEED, first, min(high - start, len(file_map)) - first)


def _byte_bounds(array):
    """The first and one-past-the-last byte addresses of ``array``'s data."""
    low = high = array.__array_interface__["data"][0]
    for length, stride in zip(array.shape, array.strides, strict=True):
        reach = (length - 1) * stride
        low, high = (low + reach, high) if reach < 0 else (low, high + reach)
    return low, high + array.itemsize


@dataclass(frozen=True)
class Moments:
    """Row count, mean and scatter (sum of centred outer products) of rows, in units of their
    largest magnitude ``unit`` (entries of at most 1, whose sums neither overflow nor
    underflow in float64)."""

    n: int
    mean: np.ndarray
    scatter: np.ndarray
    unit: float
    #: the dtype of the rows
    dtype: np.dtype = np.dtype(np.float64)

    @property
    def shape(self):
        """The shape of the rows, as an array's."""
        return self.n, len(self.mean)

    @classmethod
    def of(cls, X, first_row=0):
        """The moments of the rows ``X``, summed ``_SUM_ROWS`` at a time. A non-finite value
        is reported with its row number, counted from ``first_row``."""
        moments = None
        for start in range(0, len(X), _SUM_ROWS):
            block = X[start : start + _SUM_ROWS]
            if not np.isfinite(block).all():
                row = first_row + start + int(np.flatnonzero(~np.isfinite(block).all(axis=1))[0])
                raise ValueError(
                    f"Input X contains NaN or infinity: row {row:,} (in the block of rows "
                    f"{first_row:,} to {first_row + len(X):,}). Nothing was fitted."
                )
            rows = block.astype(np.float64)
            release_pages(block)  # read: the file's pages need not stay with the process
            peak = float(np.max(np.abs(rows))) if rows.size else 0.0
            unit = peak if peak > 0 else 1.0
            rows /= unit
            mean = rows.mean(axis=0)
            rows -= mean
            moments = cls(len(rows), mean, rows.T @ rows, unit, X.dtype).merge(moments)
        return moments

    def merge(self, other):
        """The moments of both sets of rows
        (:func:`~sklearn_adm._data.scaling.merge_moments`), in the larger unit; ``other`` may
        be None."""
        if other is None or other.n == 0:
            return self
        unit = max(self.unit, other.unit)
        a, b = self.in_unit(unit), other.in_unit(unit)
        merged = merge_moments(a.n, a.mean, a.scatter, b.n, b.mean, b.scatter)
        return Moments(*merged, unit, self.dtype)

    def in_unit(self, unit):
        ratio = self.unit / unit
        return Moments(self.n, self.mean * ratio, self.scatter * ratio * ratio, unit, self.dtype)

    def covariance(self, ddof=0):
        """The covariance, in units of ``unit`` squared."""
        return self.scatter / max(self.n - ddof, 1)

    @cached_property
    def spectrum(self):
        """The covariance's eigenvalues (ddof=1, in the data's units squared), decreasing."""
        eigenvalues = np.linalg.eigvalsh(self.covariance(ddof=1))[::-1]
        return np.clip(eigenvalues, 0, None) * self.unit**2


@dataclass(frozen=True)
class CodeMoments:
    """What a linear model's fitted attributes need of the data ``X`` and of its codes
    ``Z = (X / unit - mean) @ unmixing``, all in units of the data's largest magnitude
    ``unit`` and with ddof=0: ``cross = (X / unit - mean)^T Z / n``, ``gram = Z^T Z / n`` and
    ``total``, the summed variance of the features."""

    n: int
    mean: np.ndarray
    unit: float
    unmixing: np.ndarray
    cross: np.ndarray
    gram: np.ndarray
    total: float


def code_moments(X, unmixing, scale):
    """:class:`CodeMoments` of ``X`` (an array; a :class:`ChunkedArray`, whose moments are
    known after one pass; or the :class:`Moments` of the rows) and its codes under
    ``unmixing`` ``(n_features, d)``, which acts on the rows scaled as
    ``(X - mean) / scale``."""
    if isinstance(X, ChunkedArray | Moments):
        moments = X.moments if isinstance(X, ChunkedArray) else X
        unit, mean, covariance = moments.unit, moments.mean, moments.covariance()
        unmixing = unmixing * (unit / np.reshape(scale, (-1, 1)))
        cross = covariance @ unmixing
        return CodeMoments(
            moments.n, mean, unit, unmixing, cross, unmixing.T @ cross, np.trace(covariance)
        )
    unit, n = magnitude(X), len(X)
    unmixing = unmixing * (unit / np.reshape(scale, (-1, 1)))
    blocks = row_blocks(n)  # in float64 a block at a time: a float32 X is not copied whole
    if len(blocks) == 1:
        mean = (X.astype(np.float64) / unit).mean(axis=0)
    else:
        mean = sum((X[part].astype(np.float64) / unit).sum(axis=0) for part in blocks) / n
    cross, gram, total = 0.0, 0.0, 0.0
    for part in blocks:
        centred = X[part].astype(np.float64) / unit - mean
        codes = centred @ unmixing
        cross, gram = cross + centred.T @ codes, gram + codes.T @ codes
        total += float(np.einsum("ij,ij->", centred, centred))
    return CodeMoments(n, mean, unit, unmixing, cross / n, gram / n, total / n)


def _merge_all(moments):
    """The moments of all the parts, merged pairwise (a balanced tree keeps the rounding of
    sums over millions of rows at that of one block)."""
    moments = list(moments)
    while len(moments) > 1:
        pairs = [a.merge(b) for a, b in zip(moments[::2], moments[1::2], strict=False)]
        moments = pairs + (moments[-1:] if len(moments) % 2 else [])
    return moments[0]


class ChunkedArray:
    """A two-dimensional memory-mapped or Dask array, read a block of rows at a time.

    Parameters
    ----------
    X : numpy.memmap or dask.array.Array
        Float32 or float64 rows; a Dask array with known chunk sizes (its column chunks are
        joined into one).
    """

    def __init__(self, X):
        self.is_dask = _is_dask_array(X)
        #: rows that a read decodes at once, whichever of them it asks for (None: only those)
        self.decoded_rows = None
        if self.is_dask:
            warn_if_copied_memory_map(X)
            self.decoded_rows = storage_chunk_rows(X)
        if self.is_dask and X.ndim == 2 and X.numblocks[1] > 1:
            X = X.rechunk({1: -1})
        self.X = X
        self.shape, self.dtype = X.shape, X.dtype
        if self.is_dask:
            self.bounds = np.cumsum((0, *X.chunks[0]))
        else:
            step = max(1, _BLOCK_BYTES // max(X.strides[0], 1))
            self.bounds = np.r_[np.arange(0, X.shape[0], step), X.shape[0]]

    def __len__(self):
        return self.shape[0]

    def read(self, start, stop):
        """Rows ``start`` to ``stop`` as an in-memory NumPy array."""
        if self.is_dask:
            return np.asarray(self.X[start:stop].compute())
        rows = np.array(self.X[start:stop])
        release_pages(self.X[start:stop])
        return rows

    def blocks(self):
        """The rows block by block, each in memory and of at most ``_BLOCK_BYTES`` (a Dask
        array's chunk is read once and split where larger); a chunk of fewer than two rows
        joins the next (the last, the one before it), so that each block is a batch a fit
        accepts."""
        bounds = [0]
        for stop in self.bounds[1:]:
            if stop - bounds[-1] >= 2:
                bounds.append(stop)
        if len(bounds) == 1:  # fewer than two rows in all: one block, for validation to refuse
            bounds.append(len(self))
        bounds[-1] = len(self)
        for start, stop in zip(bounds[:-1], bounds[1:], strict=True):
            rows = self.read(start, stop)
            parts = max(1, min(len(rows) // 2, -(-rows.nbytes // _BLOCK_BYTES)))
            yield from np.array_split(rows, parts)

    def take(self, rows):
        """The rows ``rows`` (sorted indices, repeats allowed), a block at a time (a chunk at
        a time where the chunks are decoded here: :func:`_decodes_here`)."""
        rows = np.asarray(rows)
        if self.is_dask and not _decodes_here(self.X, self.decoded_rows):
            return np.asarray(self.X[rows].compute())
        parts = []
        for start, stop in zip(self.bounds[:-1], self.bounds[1:], strict=True):
            inside = rows[(rows >= start) & (rows < stop)]
            if len(inside) and self.is_dask:  # the chunk whole (a slice reads fastest)
                parts.append(self.read(start, stop)[inside - start])
            elif len(inside):
                parts.append(np.array(self.X[inside]))
                release_pages(self.X[start:stop])
        return np.concatenate(parts) if parts else np.empty((0, self.shape[1]), self.dtype)

    @cached_property
    def moments(self):
        """The :class:`Moments` of all rows, from one pass over the blocks (where the chunks
        are, or a chunk at a time where they are decoded here, as :meth:`take` reads them);
        a NaN or infinity raises a ``ValueError`` naming its row and block before anything is
        fitted."""
        return self.moments_and_rows(np.empty(0, dtype=np.intp))[0]

    def moments_and_rows(self, rows):
        """:attr:`moments` and :meth:`take` of ``rows``, from one pass over the blocks where
        they are read here and the moments are not known yet."""
        if "moments" in self.__dict__ or (
            self.is_dask and not _decodes_here(self.X, self.decoded_rows)
        ):
            return self._moments_where_the_chunks_are(), self.take(rows)
        parts, taken = [], []
        for start, stop in zip(self.bounds[:-1], self.bounds[1:], strict=True):
            inside = rows[(rows >= start) & (rows < stop)] - start
            block = self.read(start, stop) if self.is_dask else self.X[start:stop]
            if len(inside):
                taken.append(np.array(block[inside]))
            parts.append(Moments.of(block, int(start)))  # hands a memory map's pages back
            del block  # before the next chunk is decoded
        self.__dict__["moments"] = _merge_all(parts)
        empty = np.empty((0, self.shape[1]), self.dtype)
        return self.moments, np.concatenate(taken) if taken else empty

    def _moments_where_the_chunks_are(self):
        """:attr:`moments` as known, or from a tree of Dask tasks where the chunks are (on a
        cluster, only ``d x d`` sums travel)."""
        if "moments" in self.__dict__:
            return self.moments
        from dask import delayed

        parts = [
            delayed(Moments.of)(block, int(first))
            for block, first in zip(self.X.to_delayed().ravel(), self.bounds[:-1], strict=True)
        ]
        while len(parts) > 1:  # a tree of merges, computed where the chunks are
            parts = [delayed(_merge_all)(parts[i : i + 2]) for i in range(0, len(parts), 2)]
        self.__dict__["moments"] = parts[0].compute()
        return self.moments

    def map_rows(self, function, n_outputs, dtype):
        """``function`` applied to every block of rows, each giving ``n_outputs`` columns: a
        lazy Dask array for a Dask array, else a NumPy array filled block by block. Where
        the chunks are decoded here (:func:`_decodes_here`), each chunk's task reads its
        chunk itself once the one before has ended, so that a compute on any number of
        threads decodes one chunk at a time."""
        if self.is_dask and _decodes_here(self.X, self.decoded_rows):
            import dask
            import dask.array as da

            parts, before = [], None
            for start, stop in zip(self.bounds[:-1], self.bounds[1:], strict=True):
                rows = _Rows(self.X, start, stop)
                before = dask.delayed(_in_turn, pure=False)(rows, _releasing(function), before)
                parts.append(da.from_delayed(before, (stop - start, n_outputs), dtype))
            return da.concatenate(parts)
        if self.is_dask:
            return self.X.map_blocks(
                _releasing(function), chunks=(self.X.chunks[0], (n_outputs,)), dtype=dtype
            )
        out = np.empty((len(self), n_outputs), dtype=dtype)
        for start, stop in zip(self.bounds[:-1], self.bounds[1:], strict=True):
            out[start:stop] = _in_parts(function, self.read(start, stop))
        return out


class _Rows:
    """Rows ``start`` to ``stop`` of the Dask array ``X``, as a task's argument that Dask
    does not compute before the task (a Dask array would be)."""

    def __init__(self, X, start, stop):
        self.X, self.start, self.stop = X, start, stop


def _in_turn(rows, function, before):
    """``function`` of ``rows`` (:class:`_Rows`), read here, on this thread; ``before``, the
    result of the chunk before, only orders the tasks."""
    return function(np.asarray(rows.X[rows.start : rows.stop].compute(scheduler="sync")))


def _in_parts(function, rows):
    """``function`` of ``rows``, applied ``_MAP_BYTES`` of float64 rows at a time."""
    parts = row_blocks(len(rows), max(1, _MAP_BYTES // (8 * max(rows.shape[1], 1))))
    if len(parts) == 1:
        return function(rows)
    return np.concatenate([function(rows[part]) for part in parts])


class _releasing:
    """``function`` of a block, then the block's memory-mapped pages handed back (a Dask array
    over a memmap reads its chunks as views of the file). A class, not a closure, so that it
    pickles for a Dask cluster."""

    def __init__(self, function):
        self.function = function

    def __call__(self, block):
        result = _in_parts(self.function, block)
        release_pages(block)
        return result


def read_rows(X, rows):
    """The rows ``rows`` (sorted indices; None for all) of a memory-mapped or Dask array, in
    memory, reading only the blocks that hold them; one dimension is one column."""
    check_chunk_sizes(X)
    if X.ndim == 1:
        X = X.reshape(-1, 1)
    return ChunkedArray(X).take(np.arange(len(X)) if rows is None else rows)


def check_chunk_sizes(X):
    """Refuse a Dask array whose chunk sizes are unknown (other inputs pass)."""
    if _is_dask_array(X) and any(np.isnan(size) for size in X.chunks[0]):
        raise ValueError(
            "The Dask array has unknown chunk sizes (a filter or a dataframe's values leave "
            "them unknown); call X.compute_chunk_sizes() first."
        )


def check_chunked(estimator, X, *, reset, n_features=None):
    """Validate a memory-mapped or Dask array ``X`` as ``validate_data`` validates others,
    without reading it, and return it as a :class:`ChunkedArray`.

    With ``reset``, record ``n_features_in_``; else check ``X`` against it (or, with
    ``n_features`` given, against that many columns, as ``inverse_transform`` does)."""
    kind = "Dask array" if _is_dask_array(X) else "memory-mapped array"
    if X.ndim != 2:
        raise ValueError(
            f"Expected a 2D {kind}, got one of {X.ndim} dimension(s) and shape {X.shape}."
        )
    check_chunk_sizes(X)
    if X.dtype not in _FLOAT_DTYPES:
        raise TypeError(
            f"{type(estimator).__name__} reads a {kind} out of core as float32 or float64, "
            f"got dtype {X.dtype}: convert it once (e.g. X.astype(np.float32) written to a new "
            "file or array), so that it is not copied whole at every fit."
        )
    if len(X) < 2 and reset:
        raise ValueError(
            f"Found array with {len(X)} sample(s) (shape={X.shape}) while a minimum of 2 is "
            f"required by {type(estimator).__name__}."
        )
    if n_features is not None:
        if X.shape[1] != n_features:
            raise ValueError(
                f"X has {X.shape[1]} features, but {type(estimator).__name__} is expecting "
                f"{n_features} components as input."
            )
    else:
        _check_feature_names(estimator, X, reset=reset)
        _check_n_features(estimator, X, reset=reset)
    return ChunkedArray(X)
