# A real one-node cluster (docs/node.md): the control plane of mk/k8s.mk plus kube-scheduler, containerd + runc,
# the kubelet, bridge CNI, kube-proxy and CoreDNS. Needs root. Included by the Makefile after mk/k8s.mk.
#
#   make k8s-node-tools build every pinned binary the node needs (no-op when warm)
#   make k8s-node-deps  apt-get install the Debian packages the node needs (containerd, runc, CNI plugins, ...)
#   make k8s-node-up    start the node (builds what is missing first); state under $(K8S_STATE_DIR)
#   make k8s-node-down  stop it and remove everything it created (processes, mounts, bridge, nft/iptables, sysctls)
#   make k8s-node-status
#   make k8s-import IMAGES="a.tar b.tar"   import image archives into the node's containerd (k8s.io namespace)
#
# `make k8s-down` also stops a node started from the same state dir.
#
# Several nodes (issue 29, k8s/cluster.py; not yet what `make test` runs): one control plane and NODES worker nodes,
# each in a network namespace of its own with its own containerd, kubelet, kube-proxy and pod CIDR.
#   make k8s-cluster-up [NODES=3]   start it (builds what is missing first); state under $(K8S_STATE_DIR)
#   make k8s-cluster-down           stop it and remove everything it created (namespaces, cgroups, bridge, mounts)
#   make k8s-cluster-status

K8S_NODE := $(K8S_PYTHON) $(K8S_ROOT)/k8s/node.py
K8S_CLUSTER := $(K8S_PYTHON) $(K8S_ROOT)/k8s/cluster.py
NODES ?= 3

.PHONY: k8s-node-tools k8s-promtool k8s-node-deps k8s-node-up k8s-node-down k8s-node-status k8s-import
.PHONY: k8s-cluster-up k8s-cluster-down k8s-cluster-status

# Every pinned binary: the control plane's plus kube-scheduler, kubelet, kube-proxy, CoreDNS and pause.
# Every binary but promtool, which only the chart's alert tests use (tests/k8s): `make test` fetches it from
# Debian's prometheus package beside the e2e tests (k8s-promtool; k8s/tools/build.py PROMTOOL_DEB).
K8S_NODE_BINARIES := kube-apiserver,kube-controller-manager,kubectl,etcd,helm,kube-scheduler,kubelet,kube-proxy,coredns,pause,kube-router

k8s-node-tools:
	$(K8S_BUILD) build -p $(K8S_BUILD_PARALLEL) --only $(K8S_NODE_BINARIES)

k8s-promtool:
	$(K8S_BUILD) build -p $(K8S_BUILD_PARALLEL) --only promtool

k8s-node-deps:
	$(K8S_NODE) deps

k8s-node-up: k8s-node-tools k8s-node-deps
	$(K8S_NODE) up --no-build --state-dir $(K8S_STATE_DIR)

k8s-node-down:
	$(K8S_NODE) down --state-dir $(K8S_STATE_DIR)

k8s-node-status:
	$(K8S_NODE) status --state-dir $(K8S_STATE_DIR)

k8s-import:
	@test -n "$(IMAGES)" || { echo "error: IMAGES is empty; usage: make k8s-import IMAGES='a.tar b.tar'" >&2; exit 2; }
	$(K8S_NODE) import --state-dir $(K8S_STATE_DIR) $(IMAGES)

k8s-cluster-up: k8s-node-tools k8s-node-deps
	$(K8S_CLUSTER) up --nodes $(NODES) --no-build --state-dir $(K8S_STATE_DIR)

k8s-cluster-down:
	$(K8S_CLUSTER) down --state-dir $(K8S_STATE_DIR)

k8s-cluster-status:
	$(K8S_CLUSTER) status --state-dir $(K8S_STATE_DIR)
