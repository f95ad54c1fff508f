VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: test demo bench soak lint format generate

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q -e '.[test,dev]'
	touch $(STAMP)

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
