# `make demo` and `make test` create (or reuse) .venv, install the package, then run.
# Torch: the CPU build is installed first so that pip does not pull a multi-GB CUDA build.
# GPU users: `make test TORCH=torch` (or any pip requirement, e.g. TORCH="torch==2.13.0").
PYTHON ?= python3
TORCH ?= torch==2.13.0
# `make test CPU=avx2` (or CPU=default) runs the tests as a CPU with only those instruction
# sets would (.ci/as-cpu caps torch, MKL, oneDNN, numpy, OpenBLAS and numba); TESTS picks tests
CPU ?= native
TESTS ?=
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DOCS_STAMP := $(VENV)/.installed-docs

.PHONY: demo test lint bench doc clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet "$(TORCH)"
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	# dcor, the tests' reference, compiles its numba kernels at its first import (about 20 s
	# on 2 cores) and caches them in the environment: once, here, not in every test run
	$(BIN)/python -c "import dcor"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m sklearn_adm demo

test: $(STAMP)
	AS_CPU_PYTHON=$(BIN)/python .ci/as-cpu $(CPU) $(BIN)/python -m pytest $(TESTS)

lint: $(STAMP)
	$(BIN)/ruff check sklearn_adm tests examples benchmarks
	$(BIN)/ruff format --check sklearn_adm tests examples benchmarks

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_times.py
	$(BIN)/python benchmarks/bench_contention.py
	$(BIN)/python benchmarks/bench_critic.py --output doc/bench_table.md
	$(BIN)/python benchmarks/bench_pica.py
	$(BIN)/python benchmarks/bench_dcor.py
	$(BIN)/python benchmarks/bench_nonlinear_pica.py
	$(BIN)/python benchmarks/bench_devices.py
	$(BIN)/python benchmarks/bench_cpu_dispatch.py

# The HTML site in doc/_build/html: every example of the gallery runs; warnings are errors.
doc: $(DOCS_STAMP)
	rm -rf doc/generated
	$(BIN)/sphinx-build -W --keep-going -b html doc doc/_build/html
	@echo "Open doc/_build/html/index.html"

$(DOCS_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[dev,docs]"
	touch $(DOCS_STAMP)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache doc/_build doc/generated doc/auto_examples
