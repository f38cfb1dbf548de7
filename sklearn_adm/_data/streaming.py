"""The game's training rows: a tensor in memory, or a stream from a chunked array.

The game asks its rows for minibatches (``draw``), for their covariance and a sample (the
starts), and for a copy mapped once into the coordinates the encoder reads (``prepared``).
:class:`TensorRows` answers from a tensor. :class:`StreamedRows` answers from a memory-mapped
or Dask array that is never read whole: minibatches are drawn from a pool of rows in memory,
made of windows of consecutive rows read at random places of the array; a background thread
reads, scales and maps the next windows while the game plays, and after every
``_REFRESH_WINDOWS`` windows' worth of rows drawn, the oldest window of the pool is replaced by
the next one. Which windows are read, and when they enter the pool, follow a seeded sequence,
so a fit is as reproducible as one in memory.
"""

import queue
import threading

import numpy as np
import torch

from .._runtime.allocator import release_free_memory

#: rows of one window, read consecutively (1.5 MB at 384 float32 features)
_WINDOW_ROWS = 1024
#: rows of the pool the minibatches are drawn from (64 windows)
_POOL_ROWS = 65_536
#: a pool window is replaced after this many windows of rows were drawn (each row drawn ~twice)
_REFRESH_WINDOWS = 2
#: windows read ahead of the game
_PREFETCH = 4
#: windows taken from each chunk that the storage decodes whole (a Zarr array's), read once
_WINDOWS_PER_DECODED_CHUNK = 8
#: held-out rows, at most, drawn from an array read out of core (they are held in memory)
MAX_HELD_OUT_ROWS = 16_384


def held_out_rows(n_rows, fraction, seed):
    """Sorted indices of the held-out rows of an array read out of core: ``fraction`` of its
    ``n_rows`` (at most ``MAX_HELD_OUT_ROWS``), drawn at random with ``seed``."""
    n_held_out = min(int(round(fraction * n_rows)), MAX_HELD_OUT_ROWS)
    return np.sort(np.random.default_rng(seed).choice(n_rows, n_held_out, replace=False))


class TensorRows:
    """Training rows held in a tensor."""

    def __init__(self, X):
        self.X = X
        self.dtype, self.device = X.dtype, X.device

    def __len__(self):
        return len(self.X)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def covariance(self):
        """``X^T X / n`` in float64: the covariance of the (centred) rows."""
        X = self.X.double()
        return X.T @ X / len(X)

    def sample(self, n_rows):
        """At most ``n_rows`` rows at random (torch's global generator, which the estimator
        seeds while it builds its model)."""
        return self.X[torch.randperm(len(self.X), device=self.X.device)[:n_rows]]

    def in_memory(self, max_rows):
        """All the rows."""
        return self.X

    def prepared(self, prepare):
        return TensorRows(prepare(self.X))

    def draw(self, size, count, generator):
        """``count`` minibatches of ``size`` rows drawn with replacement, stacked; all rows
        (once) when ``size`` covers them."""
        return _draw(self.X, size, count, generator)


def _draw(X, size, count, generator):
    if size >= len(X):
        return X
    index = torch.randint(len(X), (count * size,), generator=generator, device=X.device)
    return torch.index_select(X, 0, index)  # a quarter of the time of X[index] here


class StreamedRows:
    """Training rows of a :class:`~sklearn_adm._data.chunked.ChunkedArray`, read a window at a time.

    Parameters
    ----------
    source : ChunkedArray
    held_out : ndarray of int
        Sorted indices of the rows the game holds out: never drawn.
    scale_rows : callable
        Maps raw rows (NumPy) to the scaled float32 rows the game learns from.
    covariance : tensor of shape (n_features, n_features)
        The covariance of the scaled rows, float64, on the training device.
    seed : int
        Seeds the sequence of windows.
    device : torch.device
    """

    def __init__(self, source, held_out, scale_rows, covariance, seed, device):
        self.source, self.held_out, self.scale_rows = source, held_out, scale_rows
        self._covariance, self.device = covariance, device
        self.dtype = torch.float32
        self.rng = np.random.default_rng(seed)
        self.n_rows = len(source) - len(held_out)
        self.prepare = None
        self.pool = None
        self._thread = None

    def __len__(self):
        return self.n_rows

    def covariance(self):
        return self._covariance

    def sample(self, n_rows):
        """About ``n_rows`` training rows (all, where there are fewer), from random windows."""
        if self.n_rows <= max(n_rows, _POOL_ROWS):
            return self._tensor(self._all_training_rows())
        windows = self._windows(self.rng)
        rows = [next(windows) for _ in range(-(-n_rows // _WINDOW_ROWS))]
        return self._tensor(np.concatenate(rows)[:n_rows])

    def in_memory(self, max_rows):
        """A sample of at most ``max_rows`` rows: they are not all in memory."""
        return self.sample(max_rows)

    def prepared(self, prepare):
        """The same rows, mapped by ``prepare`` as they are read; the pool is filled when the
        game enters the ``with`` block."""
        self.prepare = prepare
        return self

    def __enter__(self):
        if self.n_rows <= _POOL_ROWS:  # the pool holds every training row: nothing to stream
            self.pool = self._mapped(self._all_training_rows())
            return self
        self._queue = queue.Queue(maxsize=_PREFETCH)
        self._reader_rng = np.random.default_rng(self.rng.integers(2**63))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read_ahead, daemon=True)
        self._thread.start()
        self.pool = torch.cat([self._next_window() for _ in range(_POOL_ROWS // _WINDOW_ROWS)])
        self._slot, self._drawn = 0, 0
        return self

    def __exit__(self, *exc):
        if self._thread is not None:
            self._stop.set()
            while self._thread.is_alive():  # unblock a reader waiting for room
                try:
                    self._queue.get(timeout=0.1)
                except queue.Empty:
                    pass
            self._thread = None
        self.pool = None

    def draw(self, size, count, generator):
        """``count`` minibatches of ``size`` rows of the pool, stacked; then, where enough
        rows were drawn, the oldest window of the pool replaced by the next."""
        batch = _draw(self.pool, size, count, generator)
        if self._thread is not None:
            self._drawn += len(batch)
            while self._drawn >= _REFRESH_WINDOWS * _WINDOW_ROWS:
                self._drawn -= _REFRESH_WINDOWS * _WINDOW_ROWS
                rows = slice(self._slot * _WINDOW_ROWS, (self._slot + 1) * _WINDOW_ROWS)
                self.pool[rows] = self._next_window()
                self._slot = (self._slot + 1) % (len(self.pool) // _WINDOW_ROWS)
        return batch

    def _next_window(self):
        window = self._queue.get()
        if isinstance(window, BaseException):
            raise window
        return window

    def _read_ahead(self):
        """The reader thread: windows in the seeded order, mapped, until told to stop."""
        try:
            with torch.no_grad():
                for window in self._windows(self._reader_rng):
                    if self._stop.is_set():
                        break
                    self._queue.put(self._mapped(window))
        except BaseException as error:  # handed to the game, which raises it
            self._queue.put(error)

    def _windows(self, rng):
        """Windows of ``_WINDOW_ROWS`` training rows, endlessly, in ``rng``'s order: each
        consecutive rows from a random place. Where the storage decodes whole chunks,
        ``_WINDOWS_PER_DECODED_CHUNK`` windows come from each chunk it decodes (a random one),
        read once: a window of a Zarr array would otherwise cost its whole chunk."""
        n_rows, chunk = len(self.source), self.source.decoded_rows
        while True:
            if chunk is None:
                starts = [rng.integers(n_rows - _WINDOW_ROWS + 1)]
            else:
                first = rng.integers(-(-n_rows // chunk)) * chunk
                low = min(first, n_rows - _WINDOW_ROWS)
                high = max(low, min(first + chunk, n_rows) - _WINDOW_ROWS)
                starts = np.sort(rng.integers(low, high + 1, size=_WINDOWS_PER_DECODED_CHUNK))
            if chunk is None:
                rows = self.source.read(starts[0], starts[0] + _WINDOW_ROWS)
            else:  # the windows' rows alone: their span would hold up to a chunk meanwhile
                offsets = np.arange(_WINDOW_ROWS)
                rows = self.source.take(np.concatenate([start + offsets for start in starts]))
                release_free_memory()
            for window, start in zip(np.split(rows, len(starts)), starts, strict=True):
                yield self._training_rows(window, start, rng)

    def _training_rows(self, rows, start, rng):
        """The window ``rows`` read from ``start``, its held-out rows replaced by others of
        the window."""
        first, last = np.searchsorted(self.held_out, [start, start + len(rows)])
        if last > first:
            rows = np.delete(rows, self.held_out[first:last] - start, axis=0)
            refill = rng.integers(len(rows), size=_WINDOW_ROWS - len(rows))
            rows = np.concatenate([rows, rows[refill]])
        return rows

    def _all_training_rows(self):
        """Every training row, a block at a time."""
        keep = np.ones(len(self.source), dtype=bool)
        keep[self.held_out] = False
        return self.source.take(np.flatnonzero(keep))

    def _tensor(self, rows):
        return torch.as_tensor(self.scale_rows(rows), device=self.device)

    def _mapped(self, rows):
        x = torch.as_tensor(self.scale_rows(rows))
        if self.device.type == "cuda":
            x = x.pin_memory().to(self.device, non_blocking=True)
        x = x.to(self.device)
        return self.prepare(x) if self.prepare is not None else x
