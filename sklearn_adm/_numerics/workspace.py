"""Arrays that a step repeated many times reuses from its last call, by name."""

import numpy as np


class Workspace:
    """NumPy arrays or torch tensors that a repeated step takes from its last call, by
    name: on a CPU each fresh array of a few hundred kilobytes or more is paged in anew
    (glibc hands the top of its heap back to the system between calls), which cost more than
    the arithmetic on it in a critic's training step and in a causal search's tests.
    Never copied or pickled."""

    def __init__(self):
        self.arrays = {}

    def get(self, name, like, shape=None, dtype=None):
        """The array ``name`` of ``shape`` (``like``'s by default), ``dtype`` (``like``'s by
        default) and ``like``'s kind and device: the one of the last call when it matches,
        else a new one (its values undefined)."""
        shape = tuple(like.shape if shape is None else shape)
        dtype = like.dtype if dtype is None else dtype
        kept = self.arrays.get(name)
        if (
            kept is None
            or type(kept) is not type(like)
            or tuple(kept.shape) != shape
            or kept.dtype != dtype
            or getattr(kept, "device", None) != getattr(like, "device", None)
        ):
            if isinstance(like, np.ndarray):
                kept = np.empty(shape, dtype)
            else:
                kept = like.new_empty(shape, dtype=dtype)
            self.arrays[name] = kept
        return kept

    def __getstate__(self):
        return {"arrays": {}}

    def __deepcopy__(self, memo):
        return Workspace()
