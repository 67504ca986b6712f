"""`kubectl rocketmq status` through the real kubectl binary (plugin discovery on PATH) against a real
kube-apiserver: the CRDs, a BrokerGroup from the quickstart and a status written as the operator would (no operator
runs: the status subresource is patched by hand). The namespace comes from the kubeconfig's context, as kubectl's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
NS = "plugin"
STATUS = {
    "phase": "Available",
    "master": {"brokerId": 1, "replica": "broker-a-0", "address": "10.0.0.1:10911", "epoch": 2},
    "syncStateSet": {"members": [1, 2], "epoch": 3},
    "replicas": [
        {"name": "broker-a-0", "brokerId": 1, "role": "master", "alive": True, "inSync": True, "maxOffset": 4096},
        {"name": "broker-a-1", "brokerId": 2, "role": "slave", "alive": True, "inSync": True, "maxOffset": 4096},
        {"name": "broker-a-2", "brokerId": 3, "role": "slave", "alive": False, "inSync": False},
    ],
    "needAcks": 2,
    "writable": True,
    "fenced": ["broker-a-1"],
    "conditions": [
        {
            "type": "Available",
            "status": "True",
            "reason": "Writable",
            "message": "a put needs 2 ack(s): stored",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        },
        {
            "type": "Degraded",
            "status": "True",
            "reason": "FewerInSync",
            "message": "2 in sync, inSyncReplicas is 3",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        },
    ],
}


def test_kubectl_rocketmq_status_through_kubectl(k8s_cluster: Any, tmp_path: Path) -> None:
    kubectl = k8s_cluster.kubectl
    kubectl("apply", "--server-side", "-f", ROOT / "crds")
    kubectl("wait", "--for=condition=Established", "crd/brokergroups.rocketmq-operator.dev", "--timeout=60s")
    kubectl("create", "namespace", NS)
    docs = yaml.safe_load_all((ROOT / "examples" / "quickstart.yaml").read_text(encoding="utf-8"))
    bg = next(d for d in docs if d["kind"] == "BrokerGroup")
    bg["metadata"].pop("namespace", None)
    kubectl("apply", "-n", NS, "-f", "-", input=yaml.safe_dump(bg))
    name = bg["metadata"]["name"]
    kubectl("patch", "brokergroup", name, "-n", NS, "--subresource=status", "--type=merge",
            "-p", json.dumps({"status": STATUS}))  # fmt: skip

    # A kubeconfig of our own whose context names the namespace: no -n needed, as with kubectl.
    config = tmp_path / "kubeconfig"
    shutil.copy(k8s_cluster.kubeconfig, config)
    env = {
        **k8s_cluster.env,
        "KUBECONFIG": str(config),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{k8s_cluster.env['PATH']}",  # kubectl-rocketmq
    }
    binary = str(kubectl)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([binary, *args], env=env, capture_output=True, text=True, timeout=120)

    assert run("config", "set-context", "--current", f"--namespace={NS}").returncode == 0
    assert "kubectl-rocketmq" in run("plugin", "list").stdout

    res = run("rocketmq", "status", name)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == f"brokergroup {NS}/{name}: phase Available"
    assert lines[2].split()[:7] == [name, "broker-a-0", "1", "master", "yes", "yes", "4096"]
    assert lines[3].split()[:5] == [name, "broker-a-1", "2", "slave", "(fenced)"]
    assert "(no pod)" in lines[2]  # no kubelet: the StatefulSet's pods never exist here
    assert f"{name}: needAcks=2 writable=yes master=broker-a-0 (id 1, epoch 2) syncStateSet=[1, 2] (epoch 3)" in lines
    assert "  Degraded: FewerInSync: 2 in sync, inSyncReplicas is 3" in lines

    doc = json.loads(run("rocketmq", "status", name, "-o", "json").stdout)
    assert doc["namespace"] == NS and doc["fenced"] == ["broker-a-1"] and doc["syncStateSet"]["members"] == [1, 2]

    res = run("rocketmq", "status", "broker-x")
    assert res.returncode == 1 and res.stdout == ""
    assert res.stderr.strip() == (
        f'error: brokergroup "broker-x" not found in namespace "{NS}"; fix: `kubectl get brokergroups -A` lists '
        "every namespace's groups (then pass -n NAMESPACE)"
    )
    res = run("rocketmq", "status", name, "-n", "default")
    assert res.returncode == 1 and 'namespace "default"' in res.stderr
