"""The rows a computation reads: scaling, arrays larger than memory (memory-mapped and Dask),
streams of minibatches, and the split into training and held-out rows. Imports only
:mod:`sklearn_adm._runtime`."""
