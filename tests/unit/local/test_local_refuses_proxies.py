"""`local up` refuses a Proxy with one line naming it, the rule and the fix, before anything starts (the local
platform does not run RocketMQ proxies yet; only Kubernetes does). `local apply` validates through the same
function (`lifecycle.validate`), once a cluster runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PROXY_MANIFEST = ROOT / "tests" / "golden" / "inputs" / "proxy.yaml"


def test_a_proxy_is_refused_by_local_up(tmp_path: Path) -> None:
    state = tmp_path / "state"
    cli = Path(sys.executable).parent / "rocketmq-operator"
    proc = subprocess.run(
        [str(cli), "local", "up", "-f", str(PROXY_MANIFEST), "--state-dir", str(state)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    line = next(ln for ln in out.splitlines() if ln.startswith("Proxy/proxy:"))
    assert "does not run RocketMQ proxies yet" in line and "rule:" in line and "fix:" in line
    assert "Traceback" not in out
    assert not (state / "supervisor.pid").exists()
