"""Sphinx configuration of the sklearn-adm documentation (``make doc``)."""

import os
import warnings

import sklearn_adm

project = "sklearn-adm"
author = "the sklearn-adm developers"
copyright = "2026, the sklearn-adm developers"
release = version = sklearn_adm.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",  # MathJax copied into the site: the math renders offline
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = [
    "_build",
    "bench_table.md",
    "auto_examples/*.ipynb",
    "auto_examples/*.py",
    "**.codeobj.json",
]
templates_path = ["_templates"]

# MyST: $...$ and $$...$$ math in the Markdown pages, and anchors for their headings.
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3

# API reference: one page per public name, written from the numpydoc docstrings.
autosummary_generate = True
autodoc_default_options = {"members": True}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True

# The gallery: every examples/plot_*.py runs, and its figures and output go into the page.
# SKLEARN_ADM_EXAMPLES_QUICK=1 (set by the tests) shrinks each example to a smoke run.
sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "ignore_pattern": r"__init__\.py",
    "abort_on_example_error": True,
    "download_all_examples": False,
    "matplotlib_animations": False,
    "image_scrapers": ("matplotlib",),
    "reset_modules": ("matplotlib",),
    "remove_config_comments": True,
    "show_memory": False,
    "min_reported_time": 1,
}
os.environ.setdefault("MPLBACKEND", "Agg")
# tqdm's optional notebook widgets are not used; keep the build log free of their notice.
warnings.filterwarnings("ignore", message="IProgress not found")

html_theme = "pydata_sphinx_theme"
html_title = f"sklearn-adm {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_static_path = []
html_show_sourcelink = False


def _skip_metadata_requests(app, what, name, obj, skip, options):
    """scikit-learn generates ``set_*_request`` methods whose docstrings cite its own
    glossary; they are documented there."""
    return True if name.startswith("set_") and name.endswith("_request") else None


def setup(app):
    app.connect("autodoc-skip-member", _skip_metadata_requests)
