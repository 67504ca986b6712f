"""Small pure helpers shared by the e2e conftest and tests (a module of its own: test modules cannot import
``conftest`` by name, the top-level tests/conftest.py owns that name)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from e2e import timeline

ROOT = Path(__file__).resolve().parents[2]


def pod_ready(pod: dict[str, Any]) -> bool:
    conds = {c["type"]: c["status"] for c in pod.get("status", {}).get("conditions", [])}
    return conds.get("Ready") == "True"


def operator_version() -> str:
    m = re.search(r'^version\s*=\s*"([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    assert m
    return m.group(1)


def wait_proxy_ready(node: Any, ns: str, name: str, replicas: int) -> float:
    """Waits until the Proxy reports `replicas` ready and its Ready condition; returns the seconds waited."""

    def ready() -> bool:
        status = node.json("-n", ns, "get", "proxy", name).get("status") or {}
        conditions = {c["type"]: c["status"] for c in status.get("conditions") or []}
        return status.get("readyReplicas") == replicas and conditions.get("Ready") == "True"

    return float(node.wait_for(f"{replicas} ready replicas of Proxy {ns}/{name}", ready, timeout=600))


def kubectl_rocketmq(node: Any, ns: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`kubectl rocketmq ARGS -n NS` through the node's kubectl, as a user runs it: plugin discovery on PATH (the
    venv's `kubectl-rocketmq`), the node's kubeconfig."""
    env = {**node.env, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{node.env['PATH']}"}
    argv = [str(node.state_dir / "bin" / "kubectl"), "rocketmq", *args, "-n", ns]
    started = time.monotonic()
    try:
        return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
    finally:
        timeline.record("kubectl rocketmq", " ".join(args), time.monotonic() - started)
