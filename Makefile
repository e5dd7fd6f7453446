# Two entry points: `make serve` (run the service on the embedded default) and `make test` (everything CI runs).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml sdk/python/pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: serve test lint typecheck pytest bench demo clean

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "ctxmem needs Python 3.11+, found " + sys.version.split()[0])'
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml sdk/python/pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,otel]'
	$(BIN)/python -m pip install --quiet -e 'sdk/python[mcp,langgraph,agents]'
	@rm -f $(VENV)/.installed-*
	@touch $(STAMP)

serve: $(STAMP)
	$(BIN)/ctxmem serve

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

test: lint typecheck pytest

bench: $(STAMP)
	$(BIN)/python -m bench.ingest

clean:
	rm -rf $(VENV) .ctxmem .pytest_cache .mypy_cache .ruff_cache
