"""`kubectl rocketmq` (cli.kubectl) against an in-process API server over real HTTP (kube_http_fake): the official
client's own serialization runs. Status view, a group that does not exist, switchover through the annotation and
its outcome, fence, restart, the report tarball (never a Secret), and kubectl's namespace/context resolution."""

from __future__ import annotations

import io
import json
import shlex
import tarfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kube_http_fake import FakeApiServer, kubeconfig, serve
from rich.console import Console

from rocketmq_operator.cli import kubectl
from rocketmq_operator.core.backup_schedule import BACKUP_REQUEST_ANNOTATION
from rocketmq_operator.render.kubernetes.names import (
    ANNOTATION_FENCE,
    ANNOTATION_RESTARTED_AT,
    ANNOTATION_SWITCHOVER_TO,
    LABEL_GROUP,
)

JSON = dict[str, Any]
NS = "rocketmq"


def replica(name: str, broker_id: int, role: str, max_offset: int, in_sync: bool = True) -> JSON:
    return {
        "name": name,
        "brokerId": broker_id,
        "role": role,
        "alive": True,
        "inSync": in_sync,
        "maxOffset": max_offset,
        "lagBytes": 1000 - max_offset,
        "address": f"10.0.0.{broker_id}:10911",
    }


def cond(type_: str, status: str, reason: str = "R", message: str = "", when: str = "2026-01-01T00:00:00Z") -> JSON:
    return {"type": type_, "status": status, "reason": reason, "message": message, "lastTransitionTime": when}


def broker_group(namespace: str = NS) -> JSON:
    return {
        "apiVersion": "rocketmq-operator.dev/v1alpha1",
        "kind": "BrokerGroup",
        "metadata": {"name": "broker-a", "namespace": namespace, "generation": 1},
        "spec": {"replicas": 3, "controllerRef": {"name": "controllers"}},
        "status": {
            "phase": "Available",
            "master": {"brokerId": 1, "replica": "broker-a-0", "address": "10.0.0.1:10911", "epoch": 3},
            "syncStateSet": {"members": [1, 2, 3], "epoch": 4},
            "replicas": [
                replica("broker-a-0", 1, "master", 1000),
                replica("broker-a-1", 2, "slave", 900),
                replica("broker-a-2", 3, "slave", 1000),
            ],
            "needAcks": 2,
            "writable": True,
            "conditions": [
                cond("ControllerUnavailable", "False"),
                cond("Available", "True", "Writable"),
                cond("QuorumAtRisk", "True", "OneLossBlocksWrites", "losing one more replica gives refused"),
                cond("Reconciled", "True", "Applied"),
            ],
            "history": [
                {
                    "time": "2026-01-01T00:00:00Z",
                    "fromBrokerId": 2,
                    "toBrokerId": 1,
                    "epoch": 3,
                    "reason": "elected by the RocketMQ controller",
                }
            ],
        },
    }


def pod(name: str, group: str, component: str, restarts: int = 0, namespace: str = NS) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {LABEL_GROUP: group, "app.kubernetes.io/component": component},
        },
        "spec": {"nodeName": "node-1", "containers": [{"name": component, "image": "rocketmq:5.5.0"}]},
        "status": {
            "phase": "Running",
            "podIP": "10.0.0.9",
            "containerStatuses": [
                {
                    "name": component,
                    "image": "rocketmq:5.5.0",
                    "imageID": "sha256:1",
                    "ready": True,
                    "restartCount": restarts,
                    "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}},
                }
            ],
        },
    }


def event(name: str, kind: str, involved: str, reason: str, message: str, type_: str = "Normal") -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": NS},
        "involvedObject": {"kind": kind, "name": involved, "namespace": NS},
        "reason": reason,
        "message": message,
        "type": type_,
        "lastTimestamp": "2026-01-01T00:00:01Z",
    }


@pytest.fixture
def api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeApiServer]:
    with serve() as server:
        path = kubeconfig(tmp_path / "config", server.url, {"main": NS, "other": None}, "main")
        monkeypatch.setenv("KUBECONFIG", str(path))
        monkeypatch.setattr(kubectl, "POLL_S", 0.01)
        server.put(broker_group())
        server.put({"apiVersion": "rocketmq-operator.dev/v1alpha1", "kind": "ControllerGroup",
                    "metadata": {"name": "controllers", "namespace": NS}, "spec": {"replicas": 1},
                    "status": {"leader": "controllers-0", "phase": "Running"}})  # fmt: skip
        for i in range(3):
            server.put(pod(f"broker-a-{i}", "broker-a", "broker", restarts=1 if i == 1 else 0))
            server.logs[(NS, f"broker-a-{i}", "broker", False)] = f"log of broker-a-{i}\n"
        server.logs[(NS, "broker-a-1", "broker", True)] = "the log before the restart\n"
        server.put(pod("controllers-0", "controllers", "controller"))
        server.logs[(NS, "controllers-0", "controller", False)] = "controller log\n"
        server.put({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "broker-a-acl", "namespace": NS},
                    "data": {"password": "c2VjcmV0"}})  # fmt: skip
        server.put({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "broker-a", "namespace": NS},
                    "spec": {"serviceName": "broker-a", "selector": {"matchLabels": {LABEL_GROUP: "broker-a"}},
                             "template": {"metadata": {"labels": {LABEL_GROUP: "broker-a"}},
                                          "spec": {"containers": [{"name": "broker", "image": "x"}]}}}})  # fmt: skip
        server.put(event("e1", "BrokerGroup", "broker-a", "MasterChanged", "master 2 -> 1 (epoch 3)"))
        server.put(event("e2", "Pod", "broker-a-1", "BackOff", "restarting", "Warning"))
        server.put(event("e3", "Pod", "unrelated-0", "Pulled", "not ours"))
        yield server


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = kubectl.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# --- status -------------------------------------------------------------------------------------------------------


def test_status_table_from_the_status_document() -> None:
    pods = [pod(f"broker-a-{i}", "broker-a", "broker", restarts=i) for i in range(3)]
    pods.append(pod("broker-a-3", "broker-a", "broker"))  # scaled out, not observed yet
    text = kubectl.render_status(kubectl.group_document(broker_group(), pods))
    lines = text.splitlines()
    assert lines[0] == "brokergroup rocketmq/broker-a: phase Available"
    assert lines[1].split() == ["GROUP", "REPLICA", "BROKERID", "ROLE", "ALIVE", "INSYNC", "MAXOFFSET", "POD",
                                "READY", "RESTARTS"]  # fmt: skip
    assert lines[2].split() == ["broker-a", "broker-a-0", "1", "master", "yes", "yes", "1000", "Running", "1/1", "0"]
    assert lines[3].split() == ["broker-a", "broker-a-1", "2", "slave", "yes", "yes", "900", "Running", "1/1", "1"]
    assert lines[5].split() == ["broker-a", "broker-a-3", "-", "-", "-", "-", "-", "Running", "1/1", "0"]
    assert "broker-a: needAcks=2 writable=yes master=broker-a-0 (id 1, epoch 3) syncStateSet=[1, 2, 3] (epoch 4)" in (
        lines
    )
    assert "  QuorumAtRisk: OneLossBlocksWrites: losing one more replica gives refused" in lines
    assert not any("Reconciled" in line for line in lines)  # True: no problem
    assert lines[-1].startswith("  last master change 2026-01-01T00:00:00Z: broker 2 -> 1 (epoch 3)")


def test_status_shows_operation_problems_and_no_status_yet() -> None:
    bg = broker_group()
    bg["status"]["conditions"].append(cond("Switchover", "False", "Refused", "switchover refused (NotInSync): x"))
    bg["status"]["rollout"] = {"phase": "Blocked", "message": "would drop below minInSyncReplicas", "currentStep": ""}
    bg["status"]["fenced"] = ["broker-a-1"]
    text = kubectl.render_status(kubectl.group_document(bg, []))
    assert "  Switchover: Refused: switchover refused (NotInSync): x" in text
    assert "  rollout Blocked: would drop below minInSyncReplicas" in text
    assert "slave (fenced)" in text and "(no pod)" in text
    assert "admin:" not in text  # no rotation: nothing said
    bg["status"]["auth"] = {"admin": "admin-2", "phase": "Steady", "message": "kept",
                            "retiringAdmins": [{"user": "admin", "since": 1.0}]}  # fmt: skip
    text = kubectl.render_status(kubectl.group_document(bg, []))
    assert "  admin: admin-2 (Steady), retiring admin: kept" in text
    del bg["status"]
    text = kubectl.render_status(kubectl.group_document(bg, [pod("broker-a-0", "broker-a", "broker")]))
    assert "broker-a: no status yet" in text


def test_status_through_the_api(api: FakeApiServer, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "status", "broker-a")
    assert code == 0, err
    assert "broker-a-0" in out and "master=broker-a-0 (id 1, epoch 3)" in out
    code, out, _ = run(capsys, "status", "broker-a", "-o", "json")
    doc = json.loads(out)
    assert doc["namespace"] == NS and doc["master"]["replica"] == "broker-a-0"
    assert [r["pod"]["restarts"] for r in doc["replicas"]] == [0, 1, 0]
    # Only the broker pods of the group were listed.
    listed = [r for r in api.requests if r.path.endswith("/pods")]
    assert listed and all(r.query["labelSelector"] == [f"{LABEL_GROUP}=broker-a,app.kubernetes.io/component=broker"]
                          for r in listed)  # fmt: skip


def test_status_watch_shows_again_until_interrupted(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sleeps: list[float] = []
    real_sleep = time.sleep

    def sleep(seconds: float) -> None:
        # `time.sleep` is patched for the whole process: other threads of a pytest worker (py4j's, left by a Spark
        # test in the same worker) sleep too, and counting theirs kept the 3rd call from ever being the watch's.
        if threading.current_thread() is not threading.main_thread():
            real_sleep(seconds)
            return
        sleeps.append(seconds)
        if len(sleeps) == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(kubectl.time, "sleep", sleep)
    code, out, _ = run(capsys, "status", "broker-a", "--watch", "2")
    assert code == 0
    assert out.count("brokergroup rocketmq/broker-a") == 3 and sleeps == [2.0, 2.0, 2.0]


def test_status_watch_on_a_terminal_redraws_in_place(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sleeps: list[float] = []
    real_sleep = time.sleep

    def sleep(seconds: float) -> None:
        # `time.sleep` is patched for the whole process: other threads of a pytest worker (py4j's, left by a Spark
        # test in the same worker) sleep too, and counting theirs kept the 3rd call from ever being the watch's.
        if threading.current_thread() is not threading.main_thread():
            real_sleep(seconds)
            return
        sleeps.append(seconds)
        if len(sleeps) == 3:
            raise KeyboardInterrupt

    screen = io.StringIO()
    monkeypatch.setattr(kubectl, "stdout_console", lambda: Console(file=screen, force_terminal=True, width=200))
    monkeypatch.setattr(kubectl.time, "sleep", sleep)
    code, out, _ = run(capsys, "status", "broker-a", "--watch", "2")
    assert code == 0 and out == ""  # nothing appended on stdout: every frame went to the terminal
    text = screen.getvalue()
    assert text.count("brokergroup rocketmq/broker-a") >= 3 and "\x1b[1A" in text  # the cursor goes back up
    assert "(every 2s; Ctrl-C to stop)" in text


def test_a_group_that_does_not_exist_is_one_line(api: FakeApiServer, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "status", "broker-x")
    assert code == 1 and out == ""
    assert err.count("\n") == 1
    assert 'brokergroup "broker-x" not found in namespace "rocketmq"' in err and "kubectl get brokergroups -A" in err
    for argv in (["switchover", "broker-x", "--to", "auto"], ["restart", "broker-x"], ["report", "broker-x"]):
        code, _, err = run(capsys, *argv)
        assert code == 1 and "not found" in err and err.count("\n") == 1


# --- switchover ---------------------------------------------------------------------------------------------------


def operator_switches(outcome: str, message: str) -> Any:
    """A hook playing the operator's group pass: on the annotation, record the outcome and clear it."""

    def hook(server: FakeApiServer, path: str, patch: JSON) -> None:
        target = ((patch.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_SWITCHOVER_TO)
        if not target:
            return
        obj = server.objects[path]
        status = obj["status"]
        ok = outcome == "Switched"
        if ok:
            status["master"] = {"brokerId": 3, "replica": target, "epoch": 4}
        status["conditions"] = [c for c in status["conditions"] if c["type"] != "Switchover"]
        status["conditions"].append(
            cond("Switchover", "True" if ok else "False", outcome, message, "2026-01-02T00:00:00Z")
        )
        obj["metadata"]["annotations"].pop(ANNOTATION_SWITCHOVER_TO)

    return hook


def annotation_patches(api: FakeApiServer, key: str) -> list[Any]:
    return [
        r.body["metadata"]["annotations"][key]
        for r in api.requests
        if r.method == "PATCH" and key in ((r.body or {}).get("metadata") or {}).get("annotations", {})
    ]


def test_switchover_sets_the_annotation_and_prints_the_outcome(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    api.on_patch.append(operator_switches("Switched", "master is now broker 3 (epoch 4); write pause 0.171s"))
    code, out, err = run(capsys, "switchover", "broker-a", "--to", "auto", "--wait", "5")
    assert code == 0, err
    # auto: the alive in-sync slave with the longest commit log
    assert annotation_patches(api, ANNOTATION_SWITCHOVER_TO) == ["broker-a-2"]
    patch = next(r for r in api.requests if r.method == "PATCH")
    assert patch.content_type == "application/merge-patch+json"
    assert (
        out.strip() == "broker-a: switchover to broker-a-2 done: master is now broker 3 (epoch 4); write pause 0.171s"
    )


def test_switchover_refusal_is_one_line_and_exit_1(api: FakeApiServer, capsys: pytest.CaptureFixture[str]) -> None:
    api.on_patch.append(operator_switches("Refused", "switchover refused (NotInSync): broker 2 is not in sync"))
    code, out, _ = run(capsys, "switchover", "broker-a", "--to", "2", "--wait", "5")
    assert code == 1
    assert annotation_patches(api, ANNOTATION_SWITCHOVER_TO) == ["broker-a-1"]  # broker id 2 is broker-a-1
    assert out == "broker-a: switchover to broker-a-1 refused (Refused): switchover refused (NotInSync): broker 2 is " \
        "not in sync\n"  # fmt: skip


@pytest.mark.parametrize(
    ("to", "expected"),
    [
        ("broker-a-7", "is not a replica of the group (replicas: broker-a-0, broker-a-1, broker-a-2)"),
        ("broker-a-0", "broker-a-0 is the master already"),
    ],
)
def test_switchover_target_checked_against_status(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str], to: str, expected: str
) -> None:
    _, out, err = run(capsys, "switchover", "broker-a", "--to", to)
    assert expected in out + err
    assert annotation_patches(api, ANNOTATION_SWITCHOVER_TO) == []


def test_switchover_not_done_in_time_says_it_stays_requested(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "switchover", "broker-a", "--to", "broker-a-1", "--wait", "0.05")
    assert code == 1 and "not done after 0.05s" in err and "is the operator running?" in err
    assert api.get("BrokerGroup", NS, "broker-a")["metadata"]["annotations"][ANNOTATION_SWITCHOVER_TO] == "broker-a-1"


# --- fence, restart -----------------------------------------------------------------------------------------------


def test_fence_and_unfence_through_the_annotation(api: FakeApiServer, capsys: pytest.CaptureFixture[str]) -> None:
    def operator_fences(server: FakeApiServer, path: str, patch: JSON) -> None:
        obj = server.objects[path]
        wanted = (obj["metadata"].get("annotations") or {}).get(ANNOTATION_FENCE, "")
        obj["status"]["fenced"] = sorted(filter(None, wanted.split(",")))

    api.on_patch.append(operator_fences)
    code, out, err = run(capsys, "fence", "broker-a-1", "--wait", "5")
    assert code == 0, err
    assert out.strip() == "broker-a: broker-a-1 fenced: it refuses every put"
    code, out, _ = run(capsys, "fence", "broker-a-2", "--wait", "5")
    assert annotation_patches(api, ANNOTATION_FENCE) == ["broker-a-1", "broker-a-1,broker-a-2"]
    code, out, _ = run(capsys, "unfence", "broker-a-1", "--wait", "5")
    assert code == 0 and "broker-a-1 unfenced" in out
    code, out, _ = run(capsys, "unfence", "broker-a-2", "--wait", "5")
    assert annotation_patches(api, ANNOTATION_FENCE)[-2:] == ["broker-a-2", None]  # the last one removes it


def operator_backs_up(error: str | None) -> Any:
    """A hook playing the operator's ControllerGroup pass: on the backup-now annotation, answer in status.backup."""

    def hook(server: FakeApiServer, path: str, patch: JSON) -> None:
        stamp = ((patch.get("metadata") or {}).get("annotations") or {}).get(BACKUP_REQUEST_ANNOTATION)
        if not stamp:
            return
        kept = [{"secret": "controllers-metadata-0", "takenAt": stamp, "cluster": "DefaultCluster", "topics": 3,
                 "subscriptionGroups": 2, "users": 1}]  # fmt: skip
        server.objects[path]["status"]["backup"] = {
            "lastRequest": stamp,
            "lastError": error,
            "kept": [] if error else kept,
        }

    return hook


def test_backup_asks_the_operator_and_prints_what_it_kept(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "backup", "controllers", "--wait", "5")
    assert code == 1 and "spec.backup is not set" in err and "fix: `kubectl patch controllergroup" in err
    path = next(p for p, o in api.objects.items() if o["kind"] == "ControllerGroup")
    api.objects[path]["spec"]["backup"] = {"every": "24h"}
    api.on_patch.append(operator_backs_up(None))
    code, out, err = run(capsys, "backup", "controllers", "--wait", "5")
    assert code == 0, err
    assert len(annotation_patches(api, BACKUP_REQUEST_ANNOTATION)) == 1
    assert out.startswith("controllers: backup of cluster DefaultCluster in Secret controllers-metadata-0 (key ")
    assert "3 topic(s), 2 subscription group(s), 1 user(s)" in out
    api.on_patch[:] = [operator_backs_up("broker-a: no master is registered; fix: wait")]
    code, _, err = run(capsys, "backup", "controllers", "--wait", "5")
    assert code == 1 and err.strip().endswith("backup failed: broker-a: no master is registered; fix: wait")
    code, _, err = run(capsys, "backup", "nope", "--wait", "5")
    assert code == 1 and 'controllergroup "nope" not found' in err


def test_rotate_ca_asks_the_operator_and_prints_the_state_it_records(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as usage:
        run(capsys, "rotate-ca", "--overlap", "soon")
    err = capsys.readouterr().err
    assert usage.value.code == 2 and "argument --overlap: 'soon' is not a duration" in err and "fix:" in err
    code, _, err = run(capsys, "rotate-ca")
    assert code == 1 and 'secret "rocketmq-operator-tls-ca" not found in namespace "rocketmq"' in err, err
    api.put({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "rocketmq-operator-tls-ca", "namespace": NS},
             "data": {"ca.key": "c2VjcmV0"}})  # fmt: skip

    def operator_rotates(server: FakeApiServer, path: str, patch: JSON) -> None:
        asked = ((patch.get("metadata") or {}).get("annotations") or {}).get("rocketmq-operator.dev/rotate")
        if asked:
            server.objects[path]["metadata"]["annotations"].update({
                "rocketmq-operator.dev/rotated-for": asked,
                "rocketmq-operator.dev/authority-state": "authority: wait: both authorities trusted until T",
            })  # fmt: skip

    api.on_patch.append(operator_rotates)
    code, out, err = run(capsys, "rotate-ca", "--overlap", "0s", "--wait", "5")
    assert code == 0, err
    assert out.strip() == f"{NS}: TLS authority rotated: a new authority signs; authority: wait: both authorities " + (
        "trusted until T"
    )
    assert len(annotation_patches(api, "rocketmq-operator.dev/rotate")) == 1
    assert annotation_patches(api, "rocketmq-operator.dev/overlap") == ["0s"]
    assert "c2VjcmV0" not in out + err  # the Secret's data is never shown


def test_drain_group_sets_spec_draining_and_waits_for_drained(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    def operator_drains(server: FakeApiServer, path: str, patch: JSON) -> None:
        if (patch.get("spec") or {}).get("draining"):
            server.objects[path]["status"]["drain"] = {"drained": True, "lagTotal": 0, "message": "broker-a: drained"}

    api.on_patch.append(operator_drains)
    code, out, err = run(capsys, "drain-group", "broker-a", "--wait", "5")
    assert code == 0, err
    assert out.splitlines() == [
        "broker-a: drained",
        "broker-a: drained; remove it with `kubectl delete brokergroup broker-a`",
    ]
    code, out, _ = run(capsys, "drain-group", "broker-a", "--undo")
    assert code == 0 and "drain taken back" in out
    api.on_patch.clear()
    path = next(p for p, o in api.objects.items() if o["kind"] == "BrokerGroup")
    api.objects[path]["status"].pop("drain")
    code, _, err = run(capsys, "drain-group", "broker-a", "--wait", "0.05")
    assert code == 1 and "no status.drain yet: is the operator running?" in err


def test_restart_stamps_the_pod_template(api: FakeApiServer, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "restart", "broker-a")
    assert code == 0, err
    assert "rolling restart requested" in out
    patch = next(r for r in api.requests if r.method == "PATCH")
    assert patch.path == f"/apis/apps/v1/namespaces/{NS}/statefulsets/broker-a"
    assert patch.content_type == "application/strategic-merge-patch+json"
    sts = api.get("StatefulSet", NS, "broker-a")
    assert ANNOTATION_RESTARTED_AT in sts["spec"]["template"]["metadata"]["annotations"]


# --- report -------------------------------------------------------------------------------------------------------


def test_report_tarball_contents(api: FakeApiServer, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out_file = tmp_path / "r.tar.gz"
    code, _, err = run(capsys, "report", "broker-a", "-o", str(out_file))
    assert code == 0, err
    with tarfile.open(out_file) as tar:
        files = {m.name.removeprefix("rocketmq-report-broker-a/"): tar.extractfile(m).read().decode() for m in tar}  # type: ignore[union-attr]
    assert {
        "brokergroup.yaml", "controllergroup.yaml", "statefulsets/broker-a.yaml", "status.json", "status.txt",
        "events.yaml", "README.txt", "pods/broker-a-0.yaml", "pods/broker-a-1.describe.txt", "pods/controllers-0.yaml",
        "logs/broker-a-0/broker.log", "logs/broker-a-1/broker.previous.log", "logs/controllers-0/controller.log",
    } <= set(files)  # fmt: skip
    assert "logs/broker-a-0/broker.previous.log" not in files  # never restarted: no previous log asked
    assert yaml.safe_load(files["brokergroup.yaml"])["metadata"]["name"] == "broker-a"
    assert yaml.safe_load(files["controllergroup.yaml"])["status"]["leader"] == "controllers-0"
    assert json.loads(files["status.json"])["brokerGroup"]["master"]["replica"] == "broker-a-0"
    assert files["logs/broker-a-1/broker.previous.log"] == "the log before the restart\n"
    reasons = [e["reason"] for e in yaml.safe_load(files["events.yaml"])]
    assert sorted(reasons) == ["BackOff", "MasterChanged"]  # not the unrelated pod's
    assert "Restart Count:  1" in files["pods/broker-a-1.describe.txt"]
    assert "BackOff" in files["pods/broker-a-1.describe.txt"]
    # Never a Secret: not asked for, not in the tarball.
    assert not any("secret" in p for p in api.paths_requested())
    assert not any("c2VjcmV0" in text or "kind: Secret" in text for text in files.values())


# --- namespace and context ----------------------------------------------------------------------------------------


def namespaces_asked(api: FakeApiServer) -> set[str]:
    return {r.path.split("/namespaces/")[1].split("/")[0] for r in api.requests if "/namespaces/" in r.path}


def test_namespace_is_the_contexts_then_default_then_the_flag(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    api.put(broker_group("default"))
    api.put(broker_group("team"))
    run(capsys, "status", "broker-a")
    assert namespaces_asked(api) == {NS}  # the current context's namespace
    api.requests.clear()
    run(capsys, "--context", "other", "status", "broker-a")
    assert namespaces_asked(api) == {"default"}  # a context without a namespace
    api.requests.clear()
    run(capsys, "status", "broker-a", "-n", "team")  # after the subcommand, as kubectl allows
    assert namespaces_asked(api) == {"team"}
    api.requests.clear()
    run(capsys, "-n", "team", "--context", "other", "status", "broker-a")
    assert namespaces_asked(api) == {"team"}


def test_kubeconfig_flag_and_merged_kubeconfig_env(
    api: FakeApiServer, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    api.put(broker_group("second"))
    second = kubeconfig(tmp_path / "second", api.url, {"two": "second"}, None)
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'config'}:{second}")
    code, _, err = run(capsys, "--context", "two", "status", "broker-a")
    assert code == 0, err
    assert namespaces_asked(api) == {"second"}
    api.requests.clear()
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    code, _, err = run(capsys, "--kubeconfig", str(second), "--context", "two", "status", "broker-a")
    assert code == 0, err
    assert namespaces_asked(api) == {"second"}


@pytest.mark.parametrize(
    ("argv", "env", "expected"),
    [
        (["--context", "nope"], "config", "context 'nope' is not in kubeconfig"),
        ([], "missing", "no kubeconfig at"),
        (["--kubeconfig", "garbage"], "config", "cannot be read"),
    ],
)
def test_unusable_credentials_are_one_line_exit_2(
    api: FakeApiServer,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    env: str,
    expected: str,
) -> None:
    (tmp_path / "garbage").write_text("- not\n- a kubeconfig\n", encoding="utf-8")
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / env))
    monkeypatch.setattr("rocketmq_operator.cli.kubectl_api.SERVICE_ACCOUNT_DIR", tmp_path / "no-sa")
    argv = [a if a != "garbage" else str(tmp_path / "garbage") for a in argv]
    code, out, err = run(capsys, *argv, "status", "broker-a")
    assert code == 2 and out == "" and err.count("\n") == 1 and expected in err, err
    assert api.requests == []


def test_an_unreachable_api_server_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = kubeconfig(tmp_path / "config", "http://127.0.0.1:9", {"main": None}, "main")
    monkeypatch.setenv("KUBECONFIG", str(path))
    code, _, err = run(capsys, "status", "broker-a")
    assert code == 1 and err.count("\n") == 1 and "cannot reach the API server at http://127.0.0.1:9" in err


def test_every_readme_plugin_command_is_one_the_plugin_accepts() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## `kubectl rocketmq`\n") :]
    block = section[section.index("```sh\n") + len("```sh\n") : section.index("```\n", section.index("```sh\n") + 5)]
    commands = [shlex.split(line, comments=True) for line in block.splitlines() if line.startswith("kubectl rocketmq")]
    assert {argv[2] for argv in commands} >= {"status", "switchover", "fence", "restart", "report"}
    for argv in commands:
        kubectl.build_parser().parse_args(argv[2:])
