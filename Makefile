# Two commands for a fresh machine: `make run` and `make test`. Everything else is a building block.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: install run test lint typecheck prepare clean

include mk/k8s.mk
include mk/node.mk
include mk/images.mk

install: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[kubernetes,dev,spark]'
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

# The real parts tests need, fetched and built once and cached under ~/.cache/rocketmq-operator:
# RocketMQ jars from Maven Central, and kube-apiserver/etcd/kubectl/helm from the Go module proxy.
prepare: install k8s-tools
	$(BIN)/rocketmq-operator local dist-path >/dev/null
	@command -v shellcheck >/dev/null || { apt-get update -qq && apt-get install -y -qq shellcheck >/dev/null; }

test: install lint typecheck prepare
	$(BIN)/python -m pytest -q -p no:cacheprovider

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
