# tidemark: two commands do all the set-up: `make demo` and `make test`.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
UV_VERSION := 0.13.9
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: install system-deps test test-fast test-heavy lint typecheck demo demo-check bench peer-fixtures clean

$(STAMP): requirements.lock pyproject.toml $(wildcard jobs/jvmdeps/bundles/*/*)
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q "uv==$(UV_VERSION)"
	$(BIN)/uv pip sync --compile-bytecode --python $(BIN)/python requirements.lock
	$(BIN)/uv pip install --python $(BIN)/python --no-deps --config-settings editable_mode=compat -e .
	$(BIN)/python -m compileall -q jobs dags ui  # bytecode once, not per process (see README)
	$(BIN)/python -m jobs.engine.kernels  # numba kernels compiled into their cache, once
	$(BIN)/python -m jobs.spark.jvm  # tidemark's JVM functions (native-path gate)
	$(BIN)/python -m jobs.jvmdeps fetch  # pinned, checksummed jars from Maven Central (jobs/jvmdeps/)
	$(BIN)/python -m jobs.spark.cds  # the driver JVM's class-data sharing archive (~1 min)
	touch $(STAMP)

install: $(STAMP)

# Debian packages the tests need (chromium for the browser tests, PostgreSQL 15 server
# binaries for the catalog suite). Idempotent and skipped when present.
system-deps:
	bash scripts/system-deps.sh

lint: install
	$(BIN)/ruff check jobs dags ui tests benchmarks migrations
	$(BIN)/mypy

test: install system-deps
	$(BIN)/ruff check jobs dags ui tests benchmarks migrations
	$(BIN)/mypy
	$(BIN)/python -m pytest -m "not heavy" $(PYTEST_ARGS) || { \
	  echo "test: tests failed; running the failed ones once more (a real bug fails both runs)"; \
	  $(BIN)/python -m pytest -m "not heavy" --lf $(PYTEST_ARGS); }

# pytest exits 5 when no test carries the marker; that is not a failure here. The heavy
# scenarios start JVMs, clusters and Airflow on 2 cores, so a scenario that failed gets ONE
# more run (`--lf`, printed loudly); a real bug fails both runs. `test` does the same for the
# quick suite: a race that shows once on a loaded machine is reported, not fatal.
test-heavy: install system-deps
	$(BIN)/python -m pytest -m heavy $(PYTEST_ARGS) || { rc=$$?; [ $$rc -eq 5 ] || { \
	  echo "test-heavy: scenarios failed (exit $$rc); running the failed ones once more"; \
	  $(BIN)/python -m pytest -m heavy --lf $(PYTEST_ARGS); }; }

demo: install
	$(BIN)/python -m jobs.demo

# Tours a running demo (same TIDEMARK_HOME) if there is one; otherwise starts its own on a
# fresh home and free ports, tours it and stops it (what CI runs).
demo-check: install
	@if [ -f "$${TIDEMARK_HOME:-data}/demo.json" ]; then $(BIN)/python -m jobs.demo --check; else bash scripts/demo-ci.sh; fi

bench: install
	$(BIN)/python benchmarks/replay_throughput.py

# Regenerates tests/peers/fixtures/ by running Bytewax 0.21.1 itself, in a virtualenv it makes
# outside the repository (~/.cache/tidemark-peers, or TIDEMARK_PEERS_HOME); docs/semantics.md.
peer-fixtures: install
	$(BIN)/python tests/peers/bytewax_fixtures.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
