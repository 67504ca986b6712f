"""End-to-end tests on a real one-node cluster (k8s/node.py, docs/node.md): real kubelet, containerd, pods.

Not part of ``make test`` yet (docs/node.md, "Status"): they run only with ``ROCKETMQ_OPERATOR_E2E=1``, which
``make test-e2e`` sets. When they run, a missing part (root, Debian packages, binaries, images) skips them
locally and fails them under ``CI=true`` (tests/real_parts.py).

The ``k8s_node`` fixture starts the node in a temporary state dir (one node per machine: it refuses when one is
already up), imports the images built by ``make images`` and stops everything at the end of the session.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from real_parts import missing

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent

if os.environ.get("ROCKETMQ_OPERATOR_E2E", "") not in {"1", "true", "yes"}:
    collect_ignore_glob = ["test_*.py"]


def _load(name: str, path: Path) -> Any:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


harness = _load("rocketmq_operator_k8s_harness", ROOT / "k8s" / "harness.py")
node = _load("node", ROOT / "k8s" / "node.py")
images = _load("rocketmq_operator_k8s_images", ROOT / "k8s" / "images.py")


@dataclass
class Node:
    state_dir: Path
    env: dict[str, str]

    def kubectl(self, *args: object, input: str | None = None, check: bool = True, timeout: float = 120) -> str:
        argv = [str(self.state_dir / "bin" / "kubectl"), *map(str, args)]
        res = subprocess.run(argv, input=input, env=self.env, capture_output=True, text=True, timeout=timeout)
        if check and res.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(map(str, args))} failed: {res.stderr.strip()}")
        return res.stdout

    def json(self, *args: object) -> Any:
        return json.loads(self.kubectl(*args, "-o", "json"))

    def helm(self, *args: object, timeout: float = 300) -> str:
        argv = [str(self.state_dir / "bin" / "helm"), *map(str, args)]
        res = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=timeout)
        if res.returncode != 0:
            raise AssertionError(f"helm {' '.join(map(str, args))} failed: {res.stderr.strip()}")
        return res.stdout

    def wait_for(self, what: str, predicate: Callable[[], bool], timeout: float = 300, interval: float = 2) -> float:
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            if predicate():
                return time.monotonic() - started
            time.sleep(interval)
        pods = self.kubectl("get", "pods", "-A", "-o", "wide", check=False)
        raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}\n{pods}")


@pytest.fixture(scope="session")
def k8s_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    if os.geteuid() != 0:
        missing("the e2e node needs root (containerd, kubelet, network)")
    need = node.missing_deps()
    if need:
        missing(f"Debian packages missing for the node: {' '.join(need)} (make k8s-node-deps)")
    bin_dir = node.build_tools.bin_dir()
    absent = [b for b in node.build_tools.BINARIES if not (bin_dir / b).is_file()]
    if absent:
        missing(f"binaries not built: {', '.join(absent)} (make k8s-tools)")
    archives = {}
    for role in ("broker", "controller", "operator"):
        try:
            archives[role] = images.archive(role)
        except (OSError, ValueError, images.ImageError) as exc:
            missing(f"image {role} not built ({exc}); run `make images`")
    if node._read_record():
        missing(f"a node is already up on this machine ({node._read_record()['state_dir']}); stop it first")
    state = tmp_path_factory.mktemp("k8s-node").resolve()
    try:
        node.up(state, build=False)
        node.import_images(state, list(archives.values()))
    except BaseException as exc:
        node.down(state, quiet=True)
        pytest.fail(f"starting the node failed: {exc}", pytrace=False)
    try:
        yield Node(state_dir=state, env=harness.cluster_env(state))
    finally:
        node.down(state, quiet=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.e2e)
