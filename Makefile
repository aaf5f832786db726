# Two entry points a new machine needs (README): `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DEMO ?= /tmp/paimon-demo

.PHONY: demo dev test test-a-year-ahead plain-install-check lint docs

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

demo: $(BIN)/python
	$(BIN)/pip install -q -e '.[demo]'
	$(BIN)/python scripts/make_sample_table.py $(DEMO) > /dev/null
	$(BIN)/paimon-cli inspect $(DEMO)/demo.db/orders
	$(BIN)/paimon-cli expire-snapshots $(DEMO)/demo.db/orders --retain-max 5 --retain-min 1 --dry-run

dev: $(BIN)/python
	$(BIN)/pip install -q -e '.[dev]'

test: dev
	$(BIN)/ruff check core paimon_cli tests bench scripts
	$(BIN)/ruff format --check core paimon_cli tests bench scripts
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -rs -n 3 --dist loadfile

# A fresh venv with `pip install .` (no extras) maintains Java- and pypaimon-rust-written tables.
plain-install-check: dev
	$(PYTHON) scripts/plain_install_check.py --writer-python $(BIN)/python

lint: $(BIN)/python
	$(BIN)/ruff check core paimon_cli tests bench scripts
	$(BIN)/ruff format --check core paimon_cli tests bench scripts
	$(BIN)/ruff format --check core paimon_cli
	$(BIN)/mypy

docs: $(BIN)/python
	$(BIN)/python -m paimon_cli.docgen --update

# The suite with the process clock a year ahead (Debian's faketime): finds tests whose
# answers depend on today's date (DECISIONS D15). File modification times stay real under
# libfaketime, so tests that compare a file written during the test with "now" (orphan
# cleaning's cut-off, an inventory's age) fail there for that reason alone.
FAKETIME_LIB ?= /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1
test-a-year-ahead: dev
	FAKETIME="+365d" LD_PRELOAD=$(FAKETIME_LIB) $(BIN)/python -m pytest -q -rf -n 3 --dist loadfile $(TESTS)
