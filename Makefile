# Two entry points for a fresh machine: `make demo` and `make test`.
# Each builds .venv from pyproject.toml when it is missing or older than pyproject.toml.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[all,dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/gitspace demo

test: $(STAMP)
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check gitspace tests benchmarks
	$(BIN)/mypy gitspace

bench: $(STAMP)
	$(BIN)/python benchmarks/ops.py
	$(BIN)/python benchmarks/constraints.py
	$(BIN)/python benchmarks/agent.py
	$(BIN)/python benchmarks/watch.py
	$(BIN)/python benchmarks/replay.py
	$(BIN)/python benchmarks/ui.py

clean:
	rm -rf $(VENV)
