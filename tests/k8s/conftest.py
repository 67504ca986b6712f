"""A real local Kubernetes control plane for tests in tests/k8s (see k8s/harness.py, mk/k8s.mk).

``k8s_cluster`` (session scope) builds the pinned binaries if needed, starts etcd + kube-apiserver +
kube-controller-manager in a temporary state dir (never the developer's ``.k8s/``) and yields a
:class:`K8sCluster`. A failed build skips the k8s tests locally but fails them under ``CI=true``.
Tip: run ``make k8s-tools`` once beforehand; a cold build takes many minutes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import k8s_scripts
from real_parts import missing

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


harness = k8s_scripts.load("harness")


class CommandError(subprocess.CalledProcessError):
    def __str__(self) -> str:
        return f"{super().__str__()}\nstdout: {self.stdout}\nstderr: {self.stderr}"


class Tool(type(Path())):  # type: ignore[misc]
    """A path to a CLI that can also be called: ``cluster.kubectl("get", "pods")``."""

    _env: dict[str, str] | None = None

    def __call__(
        self, *args: object, input: str | None = None, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        argv = [str(self), *map(str, args)]
        res = subprocess.run(argv, input=input, env=self._env, capture_output=True, text=True, timeout=timeout)
        if check and res.returncode != 0:
            raise CommandError(res.returncode, argv, res.stdout, res.stderr)
        return res


def _tool(path: Path, env: dict[str, str]) -> Tool:
    tool = Tool(path)
    tool._env = env
    return tool


@dataclass
class K8sCluster:
    kubeconfig: Path
    kubectl: Tool  # a Path; calling it runs kubectl against this cluster
    helm: Tool
    env: dict[str, str]
    server: str
    state_dir: Path
    version: str

    def wait_for(self, what: str, predicate: Callable[[], bool], timeout: float = 60, interval: float = 0.5) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(interval)
        raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def _unavailable(reason: str) -> None:
    missing(f"k8s test infrastructure unavailable: {reason}")


@pytest.fixture(scope="session")
def k8s_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[K8sCluster]:
    failure = ""
    try:
        bin_dir = harness.build_tools.build(quiet=True, only=harness.build_tools.CONTROL_PLANE)
    except (SystemExit, OSError, subprocess.CalledProcessError) as exc:
        failure = f"building the Kubernetes binaries (make k8s-tools) failed: {exc}"
    if failure:
        _unavailable(failure)
    state = tmp_path_factory.mktemp("k8s-cluster").resolve()
    try:
        cluster = harness.up(state, bin_dir=bin_dir, quiet=True)
    except harness.HarnessError as exc:
        failure = f"starting the local control plane failed: {exc}"
    if failure:
        harness.down(state, quiet=True)
        pytest.fail(failure, pytrace=False)
    # If pytest dies without teardown, the watchdog stops the cluster once this process is gone.
    watchdog = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "k8s" / "harness.py"),
            "watch",
            "--state-dir",
            str(state),
            "--parent",
            str(os.getpid()),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    env = cluster.env()
    bins = state / "bin"
    try:
        yield K8sCluster(
            kubeconfig=cluster.kubeconfig,
            kubectl=_tool(bins / "kubectl", env),
            helm=_tool(bins / "helm", env),
            env=env,
            server=cluster.server,
            state_dir=state,
            version=cluster.kubernetes_version,
        )
    finally:
        harness.down(state, quiet=True)
        try:
            watchdog.wait(timeout=10)
        except subprocess.TimeoutExpired:
            watchdog.kill()
            watchdog.wait()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.k8s)
