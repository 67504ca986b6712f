"""`bench operator-scale` at a tiny size against the real kube-apiserver (the session's control plane): the operator
process observes every simulated group, the window and the elections are counted, nothing is left behind.
Structure and counts only: no figure here is a duration bound."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def test_operator_scale_at_two_and_four_groups(k8s_cluster: Any, tmp_path: Path) -> None:
    argv = [
        sys.executable,
        "-m",
        "rocketmq_operator.cli",
        "bench",
        "operator-scale",
        "--groups",
        "4,2",
        "--passes",
        "2",
        "--changes",
        "3",
        "--kubeconfig",
        str(k8s_cluster.kubeconfig),
        "--state-dir",
        str(tmp_path / "state"),
        "--json",
    ]
    env = {**k8s_cluster.env, "ROCKETMQ_OPERATOR_OBSERVE_SECONDS": "1"}
    run = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600, cwd=ROOT)
    logs = "\n".join(p.read_text(errors="replace")[-3000:] for p in sorted((tmp_path / "state").glob("operator-*.log")))
    assert run.returncode == 0, f"{run.stderr[-3000:]}\n{logs}"
    doc = json.loads(run.stdout)
    assert doc["bench"] == "operator-scale" and doc["observe_interval_s"] == 1.0
    assert [s["groups"] for s in doc["sizes"]] == [2, 4]  # sorted
    for size in doc["sizes"]:
        groups = size["groups"]
        assert size["brokers"] == 3 * groups
        assert size["window_complete"] is True
        assert size["passes_per_group_min"] >= 2 and size["passes"] >= 2 * groups
        # Every pass reads its group's SyncStateSet once and observes its three brokers, counted over whole passes
        # (the window's counters also hold parts of the passes in flight at its ends).
        per_code = size["group_requests_by_code_per_whole_pass"]
        assert per_code["CONTROLLER_GET_SYNC_STATE_DATA"] == 1.0
        assert per_code["GET_BROKER_RUNTIME_INFO"] >= 3.0
        assert size["unsupported_requests"] == {}, size["unsupported_requests"]
        assert size["operator_cpu_s"] > 0 and size["rss_mib"] > 0
        assert size["apiserver_requests"] > 0
        lags = size["per_change"]
        assert len(lags) == 3 and size["lags_unseen"] == 0
        assert all(x["new_master"] in (1, 2, 3) for x in lags)
        assert size["observation_lag"]["count"] == 3
        assert size["namespace_deleted"] is True
    assert set(doc["linear_until"]) >= {"cpu_s_per_pass", "apiserver_requests_per_pass", "remoting_requests_per_pass"}
    assert doc["lag_p99_bound"]["smallest"] == 2 and doc["lag_p99_bound"]["largest"] == 4
    # Nothing left: the bench's namespaces are gone.
    namespaces = k8s_cluster.kubectl("get", "namespaces", "-o", "name").stdout.split()
    assert not [n for n in namespaces if n.startswith("namespace/operator-scale-")]
