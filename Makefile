# Two commands for a fresh machine: `make run` and `make test`. Everything else is a building block.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: install run test check lint typecheck prepare prepare-rocketmq prepare-cluster soak-k8s chaos-k8s clean

include mk/k8s.mk
include mk/node.mk
include mk/images.mk

install: $(STAMP)

# The versions are pinned in constraints.txt and installed from a wheelhouse in the project's cache, fetched once
# (scripts/install-python.sh says why and how to re-pin).
$(STAMP): pyproject.toml constraints.txt scripts/install-python.sh
	scripts/install-python.sh $(VENV) $(PYTHON)
	@touch $(STAMP)

run: install
	$(BIN)/rocketmq-operator local dist-path >/dev/null
	scripts/run-demo.sh

lint: install
	$(BIN)/ruff check operator tests
	$(BIN)/ruff format --check operator tests

typecheck: install
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python scripts/import_cycles.py

# The quick loop while working (about 1-2 min warm): what `make test` checks first (lint, typecheck, import
# layers) and the unit tests, which need no JVM and no cluster. The k8s-marked unit tests need the kubectl that
# `make test` builds, so they stay in `make test`. `make test` remains the complete suite that CI runs.
check: lint typecheck
	$(BIN)/python -m pytest -q -p no:cacheprovider -n 2 -m "not k8s and not e2e and not chaos" tests/unit

# The real parts tests need, fetched and built once and cached under ~/.cache/rocketmq-operator:
# RocketMQ jars from Maven Central (prepare-rocketmq); the control plane and the node (kubelet, scheduler,
# proxy, CoreDNS, pause) from the Go module proxy, containerd/runc/CNI from Debian, and the images from
# Debian's packages by buildah (prepare-cluster).
prepare: prepare-rocketmq prepare-cluster

prepare-rocketmq: install
	$(BIN)/rocketmq-operator local dist-path >/dev/null
	@# shellcheck for the lint, iptables for the chaos tool's network faults (Debian's packages)
	@need=""; for tool in shellcheck iptables; do command -v $$tool >/dev/null || need="$$need $$tool"; done; \
	if [ -n "$$need" ]; then flock /var/lock/rocketmq-operator-apt.lock \
		sh -c "apt-get update -qq && apt-get install -y -qq$$need >/dev/null"; fi

prepare-cluster: k8s-node-deps
	$(MAKE) --no-print-directory --output-sync=target -j2 k8s-node-tools images

# scripts/run-tests.sh: prepare-cluster runs in the background while the tests that need no cluster keep both
# cores busy; then the e2e tests, and beside them (they mostly wait) the API-server tests, the chaos campaign,
# lint and typecheck. `make check` is the quick loop that lints first.
# run-tests.sh starts the cluster's build first, then installs the Python side and the distribution: on a cold
# machine the build is the critical path, and it needs neither.
test:
	scripts/run-tests.sh $(MAKE)

# Ten minutes of a CPU hog on every core of every node beside a healthy group (tests/e2e/test_soak_cpu_hog.py; never
# in `make test`): its own three-node cluster unless ROCKETMQ_OPERATOR_E2E_NODE names a running one.
soak-k8s: install prepare-rocketmq prepare-cluster
	CI=true $(BIN)/python -m pytest -q -p no:cacheprovider -s -m soak tests/e2e/test_soak_cpu_hog.py

# A chaos campaign on the real three-node cluster, from nothing to its record (tests/e2e/chaos_campaign.py; never in
# `make test`, whose e2e line runs a 12-fault one): the cluster brought up with the chart's operator, EXAMPLE applied
# in namespace chaos, FAULTS faults of every Kubernetes family under a producer on the host, the cluster taken down;
# the record is the last line printed, the journal (a line per fault, as it goes) under .bench-state/chaos-k8s.
FAULTS ?= 200
SEED ?= 1
EXAMPLE ?= examples/three-controllers.yaml
chaos-k8s: install prepare-rocketmq prepare-cluster
	$(BIN)/python tests/e2e/chaos_campaign.py --faults $(FAULTS) --seed $(SEED) --example $(EXAMPLE)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
