# Container images built here with no registry (docs/node.md, "Images"): Debian bases by debootstrap, then the
# project's Dockerfiles by buildah. Needs root. Included by the Makefile.
#
#   make images        build bases (when stale) and the broker, controller, operator and Spark images
#   make images-load   import them into the running node's containerd (make k8s-node-up first)
#   make test-e2e      only the end-to-end tests on a real node (tests/e2e; `make test` runs them too)

IMAGES_PY := $(K8S_PYTHON) $(K8S_ROOT)/k8s/images.py
IMAGES_ONLY ?= broker,controller,operator,spark

.PHONY: images images-deps images-load test-e2e

images-deps:
	$(IMAGES_PY) deps

images: images-deps
	$(IMAGES_PY) build --only $(IMAGES_ONLY)

images-load:
	$(IMAGES_PY) load --only $(IMAGES_ONLY) --state-dir $(K8S_STATE_DIR)

test-e2e: install k8s-node-tools k8s-node-deps images
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/e2e
