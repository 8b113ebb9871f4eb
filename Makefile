# The two commands: `make demo` and `make test`. Both set everything up first.
#   make demo   run the pipeline end to end on an embedded nats-server, local Spark, local Delta
#               (S3=1: the tables in an embedded S3 server, SeaweedFS)
#   make test   run the whole test suite (what CI runs, through .ci/run)
#   make dev    open the Dagster UI + daemon against the embedded nats-server
#   make lint   ruff check and format check
#   make bench  the benchmarks in bench/ (see docs/performance.md)

# The virtualenv's Python: the first of 3.11 (what CI runs the suite on), 3.12, 3.13, 3.10 found;
# (one that runs: a pyenv shim of a version not selected does not); any of them runs the
# project (`make demo PYTHON=python3.13`).
PYTHON ?= $(shell for p in python3.11 python3.12 python3.13 python3.10; do \
            $$p -c '' >/dev/null 2>&1 && { echo $$p; break; }; done)
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
EVENTS ?= 1000
PYTEST_ARGS ?=
# The suite runs on three pytest-xdist workers on two cores (a third fills the time the other
# two wait on children, servers and I/O: docs/performance.md, "The test suite's time"), a test
# file to a worker (its module fixtures are set up once), the slowest files first
# (tests/conftest.py; xdist would otherwise hand out the files with the most tests first);
# TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= 3

.PHONY: setup browser interop demo test dev lint bench clean lock

# Set-up's tool output (pip's here, Ivy's and Spark's from `jsl setup`) goes to the set-up log;
# the terminal gets a line per step, and on a failure the log's last lines and its path.
DATA_DIR  := $(or $(LAKEHOUSE_DATA_DIR),.data)
SETUP_LOG ?= $(DATA_DIR)/logs/setup.log

$(STAMP): pyproject.toml constraints.txt
	@test -x $(PY) || test -n "$(PYTHON)" || \
	 { echo "[setup] FAILED: no python3.10 to python3.13 runs here; install one, or give PYTHON=..."; exit 1; }
	@mkdir -p $(dir $(SETUP_LOG))
	@echo "[setup] Python packages: installing into $(VENV) (pip's output: $(SETUP_LOG))"
	@{ test -x $(PY) || $(PYTHON) -m venv $(VENV); } >>$(SETUP_LOG) 2>&1 && \
	 $(PY) -m pip install --progress-bar off --upgrade pip >>$(SETUP_LOG) 2>&1 && \
	 $(PY) -m pip install --progress-bar off --constraint constraints.txt --editable '.[dev]' \
	   >>$(SETUP_LOG) 2>&1 || \
	 { tail -n 20 $(SETUP_LOG); echo "[setup] FAILED: the Python packages; the whole output is in $(SETUP_LOG)"; exit 1; }
	@touch $(STAMP)

setup: $(STAMP)
	@$(PY) -m pipelines.cli setup --log $(SETUP_LOG)

demo: setup
	@$(PY) -m pipelines.cli demo --events $(EVENTS) $(if $(S3),--s3)

# The UI tests drive real headless Chromium (Debian's package); installed here when missing
# and apt-get is usable (as root). Without it, set JSL_SKIP_BROWSER_TESTS=1 to skip them.
browser:
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || \
	 { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	   apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || \
	 echo "chromium is missing: apt-get install -y chromium, or set JSL_SKIP_BROWSER_TESTS=1"

# The nats.js interop tests run real nats.js (npm packages pinned in tests/interop); they
# skip, saying why, where Node.js is missing.
interop: tests/interop/node_modules/.package-lock.json

tests/interop/node_modules/.package-lock.json: tests/interop/package-lock.json
	@command -v npm >/dev/null && npm ci --prefix tests/interop --no-audit --no-fund --loglevel=error || \
	 echo "npm is missing: the nats.js interop tests will skip"

test: setup browser interop
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS)

dev: setup
	$(PY) -m pipelines.cli dev

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

bench: setup
	$(PY) bench/ingest.py

clean:
	rm -rf .data spark-warehouse metastore_db derby.log

# constraints.txt: one resolution for every supported Python (3.10 to 3.13; uv's universal
# resolution, markers where a version differs), keeping the versions it lists where they fit.
lock: $(STAMP)
	@$(VENV)/bin/uv pip compile --quiet --universal --python-version 3.10 --no-annotate \
	  --no-header --extra dev pyproject.toml -o constraints.txt
	@{ echo "# Versions known to resolve together on Python 3.10 to 3.13 (uv's universal resolution, the"; \
	   echo "# versions before preferred); \`make lock\` rewrites it."; cat constraints.txt; } > constraints.txt.new
	@mv constraints.txt.new constraints.txt
