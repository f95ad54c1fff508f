VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DOCS_STAMP := $(VENV)/.docs-installed

.PHONY: test demo bench soak lint format generate docs

# torchrl, the largest client, is installed for tests/clients with --no-deps: its
# requirements name the reference tensordict, which must never replace this package.
$(STAMP): pyproject.toml Makefile
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q -e '.[test,dev,h5]'
	$(PY) -m pip install -q --no-deps torchrl==0.14.1 pyvers hoptorch cloudpickle packaging
	touch $(STAMP)

# The docs extra (Sphinx, the theme) only where the site is built.
$(DOCS_STAMP): $(STAMP) pyproject.toml
	$(PY) -m pip install -q -e '.[docs]'
	touch $(DOCS_STAMP)

test: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider

demo: $(STAMP)
	$(PY) -m tensordict demo

bench: $(STAMP)
	$(PY) benchmarks/bench.py $(BENCH_ARGS)

soak: $(STAMP)
	$(PY) benchmarks/soak.py $(SOAK_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: $(STAMP)
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# Rewrites tensordict/_ops/_generated/ from the tables of scripts/generate_ops.py, then
# docs/methods.md, the index of where each method lives (tests/test_generated_ops.py and
# tests/test_method_index.py fail until the checked-in files match).
generate: $(STAMP)
	$(PY) scripts/generate_ops.py
	$(PY) scripts/method_index.py

# The documentation site, offline: warnings are errors and every cross-reference must
# resolve (docs/conf.py writes the API pages first, from scripts/api_pages.py).
docs: $(DOCS_STAMP)
	$(PY) -m sphinx -b html -W --keep-going -n -j 2 -q docs docs/_build/html
	@echo "the site is in docs/_build/html/index.html"
