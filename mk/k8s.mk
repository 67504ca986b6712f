# Local Kubernetes control plane for tests: etcd + kube-apiserver + kube-controller-manager built from the
# Go module proxy (no Docker). Usable standalone (`make -f mk/k8s.mk k8s-up`) or via `include mk/k8s.mk`.
# Everything here is prefixed K8S_ so it cannot clash with the including Makefile.
#
#   make k8s-tools   build the pinned binaries into $(K8S_CACHE)/k8s/<version>/bin (no-op when warm)
#   make k8s-up      start the control plane; state, logs, pids and kubeconfig under $(K8S_STATE_DIR)
#   make k8s-down    stop it and remove $(K8S_STATE_DIR)
#   make k8s-status  show what is running
#
# Then: export KUBECONFIG=$(K8S_STATE_DIR)/kubeconfig PATH=$(K8S_STATE_DIR)/bin:$$PATH

K8S_MK_DIR := $(dir $(lastword $(MAKEFILE_LIST)))
K8S_ROOT := $(abspath $(K8S_MK_DIR)..)
K8S_PYTHON ?= python3
K8S_STATE_DIR ?= $(K8S_ROOT)/.k8s
# Secure port of kube-apiserver; 0 picks a free port (recorded in the kubeconfig).
K8S_API_PORT ?= 0
K8S_BUILD_PARALLEL ?= 2
K8S_BUILD := $(K8S_PYTHON) $(K8S_ROOT)/k8s/tools/build.py
K8S_HARNESS := $(K8S_PYTHON) $(K8S_ROOT)/k8s/harness.py

.PHONY: k8s-tools k8s-up k8s-down k8s-status

# `make test` needs the control plane, helm and promtool (the chart's alert tests) only; the node binaries (kubelet, kube-scheduler, kube-proxy,
# CoreDNS, pause) are built by k8s-node-tools (mk/node.mk), for the node and `make test-e2e`.
K8S_TEST_BINARIES := kube-apiserver,kube-controller-manager,kubectl,etcd,helm,promtool

k8s-tools:
	$(K8S_BUILD) build -p $(K8S_BUILD_PARALLEL) --only $(K8S_TEST_BINARIES)

k8s-up: k8s-tools
	$(K8S_HARNESS) up --no-build --state-dir $(K8S_STATE_DIR) --port $(K8S_API_PORT)

# k8s/node.py stops a node started from this state dir too, and otherwise does what harness.py down does.
k8s-down:
	$(K8S_PYTHON) $(K8S_ROOT)/k8s/node.py down --state-dir $(K8S_STATE_DIR)

k8s-status:
	$(K8S_HARNESS) status --state-dir $(K8S_STATE_DIR)
