# Everything installs into .venv; a machine with Python 3.11+, pip, gcc and make needs nothing else.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install test e2e lint fmt demo bench bench-notifications chaos crds clean

install: $(STAMP)

# The controller and the stand-ins (standins/: the embedded API and the demo's Prometheus, which
# the local stack, the demo and the tests run), each its own distribution; the image has only the
# first.
$(STAMP): pyproject.toml standins/pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[dev]' -e ./standins
	@touch $(STAMP)

# Unit, integration, and an end-to-end smoke of every process kind (under 6 minutes on 2 cores).
test: install
	$(BIN)/pytest -q -m 'not slow'

# The long end-to-end tier: chaos (kill -9 of worker hosts), failover, the demo, timer precision.
e2e: install
	$(BIN)/pytest -q -m slow

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python -m rollout_workers.api.crdgen --check

fmt: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

DEMO_ARGS ?= --exit-when-done
demo: install
	$(BIN)/rollouts demo $(DEMO_ARGS)

crds: install
	$(BIN)/python -m rollout_workers.api.crdgen --out deploy/crds

bench: install
	$(BIN)/python bench/queue_overhead.py
	$(BIN)/python bench/scale.py

# Notifications at scale (bench/notifications.py; 1,000 rollouts by default, sizes by
# NOTIFICATIONS_ARGS, e.g. --rollouts 50 for a smoke run). Not part of `make test`.
NOTIFICATIONS_ARGS ?=
bench-notifications: install
	$(BIN)/python bench/notifications.py $(NOTIFICATIONS_ARGS)

# The chaos loop (bench/chaos_loop.py): the e2e scenarios under kill -9 of worker hosts, every
# family at once, CHAOS_RUNS times (about 4 minutes a run). Not part of CI.
CHAOS_RUNS ?= 20
chaos: install
	$(BIN)/python bench/chaos_loop.py --runs $(CHAOS_RUNS)

clean:
	rm -rf $(VENV) .rollouts .pytest_cache .mypy_cache .ruff_cache
