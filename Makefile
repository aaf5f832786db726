# Two entry points a new machine needs (README): `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DEMO ?= /tmp/paimon-demo

.PHONY: demo test lint docs

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

demo: $(BIN)/python
	$(BIN)/pip install -q -e '.[demo]'
	$(BIN)/python scripts/make_sample_table.py $(DEMO) > /dev/null
	$(BIN)/paimon inspect $(DEMO)/demo.db/orders
	$(BIN)/paimon expire-snapshots $(DEMO)/demo.db/orders --retain-max 5 --retain-min 1 --dry-run

test: $(BIN)/python
	$(BIN)/pip install -q -e '.[dev]'
	$(BIN)/ruff check core paimon_cli tests bench scripts
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -rs

lint: $(BIN)/python
	$(BIN)/ruff check core paimon_cli tests bench scripts
	$(BIN)/ruff format --check core paimon_cli
	$(BIN)/mypy

docs: $(BIN)/python
	$(BIN)/python -m paimon_cli.docgen --update
