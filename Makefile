# Sovereign Sandbox developer loop. `make help` lists the targets.
# Every target installs what it needs itself; only python3 and make are assumed.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=
# pytest-xdist workers. Unit tests keep a core busy each: one worker per core (JOBS). The
# targets with integration tests wait much of the time (engine, registries, image builds
# fetching packages), so they run two workers per core (TEST_JOBS): on 2 cores the registry
# and CLI integration tests took 249 s with 4 workers against 320 s with 2, for the same CPU
# (docs/BENCHMARKS.md). Work stealing: a worker that runs out of tests takes the unstarted
# half of the longest queue; conftest.py gives each worker a slice of about equal expected
# time, its longest files first.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
TEST_JOBS ?= $(shell echo $$(( $(JOBS) * 2 )))
XDIST := -n $(JOBS) --dist worksteal
XDIST_WAITING := -n $(TEST_JOBS) --dist worksteal

.PHONY: help setup host-tools engine test test-fast test-slow test-integration test-seed-exact seed-check lint format demo image image-multiarch bench clean lock-dev

help: ## List the targets
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  \033[1m%-17s\033[0m %s\n", $$1, $$2}'

$(STAMP): requirements-dev.lock packages/terminai-apts/pyproject.toml packages/terminai-sandbox/pyproject.toml
	PYTHON=$(PYTHON) scripts/ensure-host-tools python
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.lock
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation \
		-e packages/terminai-apts -e packages/terminai-sandbox
	touch $@

setup: $(STAMP) ## Create .venv with both packages (editable) and the pinned dev tools

host-tools: ## Install the Debian tools the build and integration tests use (root on Debian only)
	PYTHON=$(PYTHON) scripts/ensure-host-tools all

engine: setup host-tools ## Make sure a Docker API answers (installs and starts dockerd if needed)
	$(PY) scripts/ensure-engine

# `make test` runs the lint beside the tests (it is mostly one core of mypy while the tests
# wait on engines) and prints its output after theirs; it fails if either fails.
test: setup engine ## Run everything: lint (beside the tests), unit, contract, integration tests
	@lint_log=$$(mktemp); trap 'rm -f "$$lint_log"' EXIT; \
	echo "make lint (in the background; its output follows the tests')"; \
	$(MAKE) --no-print-directory lint >"$$lint_log" 2>&1 & lint_pid=$$!; \
	echo "$(PY) -m pytest $(XDIST_WAITING) -m \"not seed and not multiarch\" $(PYTEST_ARGS)"; \
	tests=0; $(PY) -m pytest $(XDIST_WAITING) -m "not seed and not multiarch" $(PYTEST_ARGS) || tests=$$?; \
	lint=0; wait $$lint_pid || lint=$$?; \
	echo "== make lint (ran beside the tests): $$([ $$lint -eq 0 ] && echo passed || echo FAILED)"; \
	cat "$$lint_log"; \
	if [ $$lint -ne 0 ]; then echo "make test: lint failed (exit $$lint)" >&2; fi; \
	if [ $$tests -ne 0 ]; then echo "make test: tests failed (exit $$tests)" >&2; fi; \
	[ $$tests -eq 0 ] && [ $$lint -eq 0 ]

test-fast: setup ## Unit tests only (no engine, no network, no slow attack suites)
	$(PY) -m pytest $(XDIST) -m "not integration and not slow and not seed" $(PYTEST_ARGS)

test-slow: setup ## The slow suites that need no engine (the executor's assume-breach attacks)
	$(PY) -m pytest $(XDIST) -m "slow and not integration and not multiarch" $(PYTEST_ARGS)

test-integration: setup engine ## Integration tests only (real engine, real registry)
	$(PY) -m pytest $(XDIST_WAITING) -m "integration and not multiarch" $(PYTEST_ARGS)

test-seed-exact: setup ## The seed-exact differential test over many more generated archives (SEED_EXACT_EXAMPLES)
	SEED_EXACT_EXAMPLES=$${SEED_EXACT_EXAMPLES:-1500} SEED_PHRASE_EXAMPLES=$${SEED_PHRASE_EXAMPLES:-300} $(PY) -m pytest -m "not seed" tests/unit/memory/test_seed_exact.py tests/unit/memory/test_seed_phrases.py $(PYTEST_ARGS)

seed-check: setup ## Hold the seed oracle against the seed document's own code (TERMINAI_SEED_000 names it)
	SEED_EXACT_EXAMPLES=$${SEED_EXACT_EXAMPLES:-300} SEED_PHRASE_EXAMPLES=$${SEED_PHRASE_EXAMPLES:-100} $(PY) -m pytest -m seed tests/unit/memory/test_seed_exact.py tests/unit/memory/test_seed_phrases.py tests/unit/executor/test_seed_written_corpus.py $(PYTEST_ARGS)

.PHONY: peer-yardstick
peer-yardstick: setup ## Run smolagents' and RestrictedPython's own snippets through the executor (downloads their pinned sources)
	$(PY) scripts/peer-yardstick --show differ

.PHONY: attacks
attacks: setup ## The Python-layer attack generator for 10 minutes (ATTACK_SECONDS, ATTACK_SEED to change)
	APTS_ATTACK_SECONDS=$${ATTACK_SECONDS:-600} APTS_ATTACK_SEED=$${ATTACK_SEED:-2027} \
		$(PY) -m pytest -m slow tests/unit/executor/test_attack_generator.py $(PYTEST_ARGS)

lint: setup ## ruff, ruff format --check, mypy --strict, import layering, workflow audits
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy packages/terminai-apts/src packages/terminai-sandbox/src
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/zizmor --offline --persona=pedantic --no-progress --config .github/zizmor.yml .github/workflows
	$(PY) scripts/actionlint

format: setup ## Apply ruff's formatting and safe fixes
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

image: engine ## Build the image and run the contract suite inside it
	$(VENV)/bin/terminai-sandbox build
	version=$$($(PY) -c 'import terminai_apts; print(terminai_apts.__version__)'); \
	$(VENV)/bin/terminai-sandbox contracts terminai/sandbox:$$version --wheels dist/$$version/contract-wheels

# Not part of `make test`: the arm64 image is built and tested under qemu-user (minutes).
# The index and both platform images are built, then built again independently
# (--check-reproducible). The tests marked multiarch share one session build of the index:
# test_multiarch.py reads it back with skopeo and runs each platform's contract suite in its
# image; test_release_multiarch.py runs `release --platforms` to a loopback registry (cosign
# 2.x and 3.x, skopeo); test_reproducible_hosts.py builds it again from two clones.
MULTIARCH := linux/amd64,linux/arm64
MULTIARCH_TESTS := tests/integration/assemble/test_multiarch.py tests/integration/release/test_release_multiarch.py \
	tests/integration/assemble/test_reproducible_hosts.py
image-multiarch: engine ## Build linux/amd64 and linux/arm64 into one OCI index, check it reproduces, run both contract suites, release it
	$(VENV)/bin/terminai-sandbox build --platforms $(MULTIARCH) --check-reproducible
	$(PY) -m pytest -n 0 -m multiarch $(MULTIARCH_TESTS) $(PYTEST_ARGS)

demo: setup ## The main job end to end (see scripts/demo.py); installs the host tools it needs
	PYTHON=$(PYTHON) scripts/ensure-host-tools demo
	$(PY) scripts/ensure-engine
	$(PY) scripts/demo.py

bench: setup ## Run every benchmark (prints ratios against same-run baselines)
	for b in benchmarks/*.py; do echo "== $$b"; $(PY) $$b; done

lock-dev: ## Regenerate requirements-dev.lock from requirements-dev.in
	rm -rf .lockvenv && $(PYTHON) -m venv .lockvenv
	.lockvenv/bin/pip install --quiet -r requirements-dev.in
	{ echo "# Generated from requirements-dev.in by 'make lock-dev'. Do not edit by hand."; \
	  .lockvenv/bin/pip freeze --all --exclude-editable | grep -v "^pip=="; } > requirements-dev.lock
	rm -rf .lockvenv

clean: ## Remove the venv, build outputs and caches
	rm -rf $(VENV) dist build .mypy_cache .ruff_cache .pytest_cache
