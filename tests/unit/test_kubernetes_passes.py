"""The Kubernetes reconciler and group pass against an in-memory API with injected failures (kube_fake.FakeApi).

What they must do: apply only what differs and write status only when it changes (a no-op pass writes
nothing); say why a pass is blocked in status; have one writer of each condition; and, when the API server
refuses a write, raise (kopf retries the handler) without having written anything that the next pass, which
derives everything again from the cluster, would not write the same way.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import dataclasses
import json
import logging
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import kopf
import pytest
import yaml
from kube_fake import FakeApi

from rocketmq_operator.api.models import BrokerGroup
from rocketmq_operator.control import group_pass as one_pass
from rocketmq_operator.control import roll as control_roll
from rocketmq_operator.control import switchover as control_switchover
from rocketmq_operator.control.policy import PolicyOutcome
from rocketmq_operator.control.switchover import OperationRefused
from rocketmq_operator.control.topics import AssertReport
from rocketmq_operator.core.backup import (
    BackupError,
    BackupSource,
    GroupObservation,
    MetadataBackup,
    TopicEntry,
    UserEntry,
    build_backup,
)
from rocketmq_operator.core.backup_schedule import BACKUP_REQUEST_ANNOTATION
from rocketmq_operator.core.observation import GroupState, ReplicaObservation
from rocketmq_operator.core.topics import Refusal
from rocketmq_operator.platforms.kubernetes import backup_schedule as kube_backup
from rocketmq_operator.platforms.kubernetes import drain as kube_drain
from rocketmq_operator.platforms.kubernetes import group_pass
from rocketmq_operator.platforms.kubernetes import topics as kube_topics
from rocketmq_operator.platforms.kubernetes.controller_pass import controller_pass
from rocketmq_operator.platforms.kubernetes.group_memory import GroupMemory
from rocketmq_operator.platforms.kubernetes.kube import KubeError
from rocketmq_operator.platforms.kubernetes.metrics import OperatorMetrics
from rocketmq_operator.platforms.kubernetes.reconcile import reconcile
from rocketmq_operator.platforms.kubernetes.resources import controller_group, validated
from rocketmq_operator.remoting import ControllerMetadata, NoControllerLeader
from rocketmq_operator.remoting.admin import SubscriptionGroupInfo, TopicConfigInfo
from rocketmq_operator.render.kubernetes import LABEL_GROUP, LABEL_ROLE, READINESS_GATE_IN_SYNC

ROOT = Path(__file__).resolve().parents[2]
DOCS = {d["kind"]: d for d in yaml.safe_load_all((ROOT / "examples" / "quickstart.yaml").read_text())}
NS = "ns"


def api(*kinds: str) -> FakeApi:
    fake = FakeApi()
    for kind in kinds:
        fake.put(DOCS[kind])
    return fake


def body(fake: FakeApi, kind: str, name: str) -> dict[str, Any]:
    found = asyncio.run(fake.get(kind, NS, name))
    assert found is not None
    return found


def conditions(obj: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c.get("reason", "")) for c in (obj.get("status") or {}).get("conditions", [])}


# --- reconcile ---


def test_first_pass_applies_everything_and_a_second_pass_writes_nothing() -> None:
    fake = api("ControllerGroup", "BrokerGroup")
    for kind, name in (("ControllerGroup", "rocketmq-ctl"), ("BrokerGroup", "broker-a")):
        outcome = asyncio.run(reconcile(fake, body(fake, kind, name)))  # type: ignore[arg-type]
        assert outcome.applied and outcome.blocked_reason is None
    applied = fake.writes_of("apply")
    assert ("StatefulSet", "broker-a") in applied and ("StatefulSet", "rocketmq-ctl") in applied
    sts = body(fake, "StatefulSet", "broker-a")
    assert sts["metadata"]["ownerReferences"][0]["uid"] == "uid-broker-a"
    # One writer of Ready per resource: the observing passes, never the reconciler.
    assert conditions(body(fake, "BrokerGroup", "broker-a")) == {"Reconciled": ("True", "Applied")}
    assert conditions(body(fake, "ControllerGroup", "rocketmq-ctl")) == {"Reconciled": ("True", "Applied")}

    before = fake.writes
    for kind, name in (("ControllerGroup", "rocketmq-ctl"), ("BrokerGroup", "broker-a")):
        outcome = asyncio.run(reconcile(fake, body(fake, kind, name)))  # type: ignore[arg-type]
        assert not outcome.applied and outcome.unchanged > 0
    assert fake.writes == before


def test_a_missing_controller_group_blocks_the_broker_group_and_says_so() -> None:
    fake = api("BrokerGroup")
    outcome = asyncio.run(reconcile(fake, body(fake, "BrokerGroup", "broker-a")))  # type: ignore[arg-type]
    assert outcome.blocked_reason == "ControllerGroupNotFound"
    assert fake.writes_of("apply") == []
    status = body(fake, "BrokerGroup", "broker-a")
    assert conditions(status) == {"Reconciled": ("False", "ControllerGroupNotFound")}
    message = status["status"]["conditions"][0]["message"]
    assert "spec.controllerRef.name" in message and "rocketmq-ctl" in message and "fix:" in message


def test_an_invalid_spec_is_a_condition_not_an_exception() -> None:
    fake = api("ControllerGroup")
    bad = dict(DOCS["BrokerGroup"], spec={**DOCS["BrokerGroup"]["spec"], "replicas": 0})
    fake.put(bad)
    outcome = asyncio.run(reconcile(fake, body(fake, "BrokerGroup", "broker-a")))  # type: ignore[arg-type]
    assert outcome.blocked_reason == "InvalidSpec" and "spec.replicas" in outcome.blocked_message
    assert conditions(body(fake, "BrokerGroup", "broker-a")) == {"Reconciled": ("False", "InvalidSpec")}


def test_a_refused_apply_raises_and_the_next_pass_applies_only_what_is_missing() -> None:
    fake = api("ControllerGroup", "BrokerGroup")
    asyncio.run(reconcile(fake, body(fake, "ControllerGroup", "rocketmq-ctl")))  # type: ignore[arg-type]
    fake.fail_on("apply", "StatefulSet", "broker-a", status=500)
    with pytest.raises(KubeError):
        asyncio.run(reconcile(fake, body(fake, "BrokerGroup", "broker-a")))  # type: ignore[arg-type]
    assert ("StatefulSet", "broker-a") not in fake.writes_of("apply")
    assert "status" not in body(fake, "BrokerGroup", "broker-a")  # no status claims what did not happen
    applied_before = set(fake.writes_of("apply"))
    outcome = asyncio.run(reconcile(fake, body(fake, "BrokerGroup", "broker-a")))  # type: ignore[arg-type]
    assert "StatefulSet/broker-a" in outcome.applied
    assert not {("ConfigMap", "broker-a-config")} & set(fake.writes_of("apply")[len(applied_before) :])
    assert conditions(body(fake, "BrokerGroup", "broker-a"))["Reconciled"] == ("True", "Applied")


def test_a_larger_storage_size_keeps_the_claim_template_and_the_reconcile_does_not_fail() -> None:
    fake = api("ControllerGroup", "BrokerGroup")
    asyncio.run(reconcile(fake, body(fake, "BrokerGroup", "broker-a")))  # type: ignore[arg-type]
    sts = body(fake, "StatefulSet", "broker-a")
    claim = sts["spec"]["volumeClaimTemplates"][0]
    assert claim["spec"]["resources"]["requests"]["storage"] == "10Gi"
    bigger = body(fake, "BrokerGroup", "broker-a")
    bigger["spec"]["storage"]["size"] = "20Gi"
    bigger["spec"]["jvm"]["heap"] = "2Gi"  # and a change the StatefulSet does take
    fake.put(bigger)
    # The fake refuses a changed claim template as the API server does (immutable): prove it first.
    changed = copy.deepcopy(sts)
    changed["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"] = "20Gi"
    with pytest.raises(KubeError) as refused:
        asyncio.run(fake.apply(changed))
    assert refused.value.status == 422 and "Forbidden" in str(refused.value)

    outcome = asyncio.run(reconcile(fake, body(fake, "BrokerGroup", "broker-a")))  # type: ignore[arg-type]
    assert "StatefulSet/broker-a" in outcome.applied and outcome.blocked_reason is None
    after = body(fake, "StatefulSet", "broker-a")
    assert after["spec"]["volumeClaimTemplates"] == sts["spec"]["volumeClaimTemplates"]  # the PVCs grow instead
    assert after["spec"]["template"] != sts["spec"]["template"]
    assert conditions(body(fake, "BrokerGroup", "broker-a"))["Reconciled"] == ("True", "Applied")
    before = fake.writes
    asyncio.run(reconcile(fake, body(fake, "BrokerGroup", "broker-a")))  # type: ignore[arg-type]
    assert fake.writes == before  # the kept size is what was applied: nothing to apply again


def test_controller_group_lookup_reports_why() -> None:
    fake = api()
    assert asyncio.run(controller_group(fake, NS, "nope")).reason == "ControllerGroupNotFound"  # type: ignore[arg-type]
    fake.put(dict(DOCS["ControllerGroup"], spec={"replicas": 0}))
    lookup = asyncio.run(controller_group(fake, NS, "rocketmq-ctl"))  # type: ignore[arg-type]
    assert lookup.resource is None and lookup.reason == "ControllerGroupInvalid"
    fake.put(DOCS["ControllerGroup"])
    found = asyncio.run(controller_group(fake, NS, "rocketmq-ctl")).resource  # type: ignore[arg-type]
    assert found is not None and found.metadata.namespace == NS
    fake.fail_on("get", "ControllerGroup", status=503)
    with pytest.raises(KubeError):
        asyncio.run(controller_group(fake, NS, "rocketmq-ctl"))  # type: ignore[arg-type]


# --- the group pass ---

ADDR = {i: f"10.0.0.{i + 1}:10911" for i in range(3)}


def pods(fake: FakeApi, only: int | None = None) -> None:
    for i in range(3) if only is None else (only,):
        fake.put(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"broker-a-{i}",
                    "labels": {LABEL_GROUP: "broker-a", "app.kubernetes.io/component": "broker"},
                },
                "status": {"podIP": ADDR[i].split(":")[0]},
            }
        )


def healthy() -> GroupState:
    return GroupState(
        group="broker-a",
        observed_at=time.time(),
        controller_mode=True,
        controller_reachable=True,
        controller_leader="ctl:9878",
        master_broker_id=1,
        master_address=ADDR[0],
        master_epoch=1,
        sync_state_set=(1, 2, 3),
        replicas=tuple(
            ReplicaObservation(f"broker-a-{i}", ADDR[i], True, broker_id=i + 1, is_master=i == 0, max_offset=10)
            for i in range(3)
        ),
    )


@pytest.fixture
def group(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The group pass with its I/O beyond the API replaced: the observation, topics and the policy pass."""
    seen: dict[str, Any] = {"state": healthy(), "policy_runs": 0, "events": []}

    async def observe_groups(client: Any, controllers: Any, endpoints: Any, modes: Any, **_: Any) -> Any:
        seen["controllers"] = list(controllers)
        return {"broker-a": seen["state"]}

    async def reassert_topics(*_: Any) -> bool:
        return True

    async def run_replication_policy(*_: Any, **__: Any) -> PolicyOutcome:
        seen["policy_runs"] += 1
        return PolicyOutcome()

    monkeypatch.setattr(group_pass, "observe_groups", observe_groups)
    monkeypatch.setattr(group_pass, "reassert_topics", reassert_topics)
    monkeypatch.setattr(group_pass, "run_replication_policy", run_replication_policy)
    monkeypatch.setattr(group_pass.kopf, "event", lambda *a, **k: seen["events"].append(k))
    return seen


class FakeBrokers:
    """The brokers' config as GET/UPDATE_BROKER_CONFIG see it (the remoting client's part the pass uses beyond
    the observation, which the fixture replaces)."""

    def __init__(self) -> None:
        self.configs: dict[str, dict[str, str]] = {}
        self.name_servers: tuple[str, ...] = ()
        self.updates: list[tuple[str, dict[str, str]]] = []

    def with_name_servers(self, namesrv_addrs: Any) -> FakeBrokers:
        self.name_servers = tuple(namesrv_addrs)  # the pass's view for this group (one pool in the operator)
        return self

    async def get_broker_config(self, addr: str, **_: Any) -> dict[str, str]:
        return dict(self.configs.get(addr, {}))

    async def update_broker_config(self, addr: str, config: dict[str, str], **_: Any) -> None:
        self.updates.append((addr, dict(config)))
        self.configs.setdefault(addr, {}).update(config)


def run_pass(fake: FakeApi, brokers: FakeBrokers | None = None, memory: GroupMemory | None = None) -> bool:
    resource = body(fake, "BrokerGroup", "broker-a")
    logger = logging.getLogger("test")
    memory = GroupMemory() if memory is None else memory
    return asyncio.run(
        group_pass.observe_pass(fake, brokers or FakeBrokers(), OperatorMetrics(), resource, memory, logger)
    )  # type: ignore[arg-type]


def test_group_pass_writes_status_roles_and_readiness_once(group: dict[str, Any]) -> None:
    fake = api("ControllerGroup", "BrokerGroup")
    pods(fake)
    asyncio.run(reconcile(fake, body(fake, "BrokerGroup", "broker-a")))  # type: ignore[arg-type]
    run_pass(fake)
    bg = body(fake, "BrokerGroup", "broker-a")
    assert conditions(bg)["Ready"] == ("True", "AllReplicasInSync")
    assert conditions(bg)["Reconciled"] == ("True", "Applied")  # the reconciler's condition is kept
    assert bg["status"]["master"]["replica"] == "broker-a-0"
    assert group["controllers"] == ["rocketmq-ctl-0.rocketmq-ctl-headless.ns.svc:9878"]
    assert group["policy_runs"] == 1
    master = body(fake, "Pod", "broker-a-0")
    assert master["metadata"]["labels"][LABEL_ROLE] == "master"
    assert conditions(master)[READINESS_GATE_IN_SYNC][0] == "True"

    before = fake.writes
    run_pass(fake)
    assert fake.writes == before  # nothing changed: no write
    assert group["policy_runs"] == 2


def test_group_pass_is_the_one_writer_of_ready_when_blocked(group: dict[str, Any]) -> None:
    fake = api("BrokerGroup")  # no ControllerGroup
    pods(fake)
    run_pass(fake)
    ready = next(c for c in body(fake, "BrokerGroup", "broker-a")["status"]["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "ControllerGroupNotFound")
    assert "rocketmq-ctl" in ready["message"]
    # The reconciler, blocked for the same reason, does not write Ready again.
    asyncio.run(reconcile(fake, body(fake, "BrokerGroup", "broker-a")))  # type: ignore[arg-type]
    assert conditions(body(fake, "BrokerGroup", "broker-a"))["Ready"] == ("False", "ControllerGroupNotFound")


def test_group_pass_on_an_invalid_spec_says_not_ready_and_observes_nothing(group: dict[str, Any]) -> None:
    fake = api()
    fake.put(dict(DOCS["BrokerGroup"], spec={**DOCS["BrokerGroup"]["spec"], "replicas": 0}))
    run_pass(fake)
    assert conditions(body(fake, "BrokerGroup", "broker-a")) == {"Ready": ("False", "InvalidSpec")}
    assert "controllers" not in group and group["policy_runs"] == 0
    before = fake.writes
    run_pass(fake)
    assert fake.writes == before


def test_a_refused_status_write_raises_and_the_next_pass_writes_it(group: dict[str, Any]) -> None:
    fake = api("ControllerGroup", "BrokerGroup")
    pods(fake)
    # A refusal (a conflict is merged and written again by the status writer: test_kubernetes_status_writer.py).
    fake.fail_on("patch_status", "BrokerGroup", status=500)
    with pytest.raises(KubeError):
        run_pass(fake)
    # The status is published after the policy (control.group_pass: a fence never waits on a report), and nothing
    # after the refused write happened: no pod was labelled.
    assert fake.writes_of("patch") == [] and group["policy_runs"] == 1
    run_pass(fake)
    assert conditions(body(fake, "BrokerGroup", "broker-a"))["Ready"] == ("True", "AllReplicasInSync")
    assert group["policy_runs"] == 2


def test_a_refused_pod_label_raises_after_the_policy_and_the_next_pass_finishes_it(group: dict[str, Any]) -> None:
    fake = api("ControllerGroup", "BrokerGroup")
    pods(fake)
    fake.fail_on("patch", "Pod", "broker-a-1", status=500)
    with pytest.raises(KubeError):
        run_pass(fake)
    assert group["policy_runs"] == 1
    run_pass(fake)  # the status is already right; the labels are finished
    assert body(fake, "Pod", "broker-a-1")["metadata"]["labels"][LABEL_ROLE] == "slave"
    assert group["policy_runs"] == 2


def test_a_pod_deleted_earlier_in_the_pass_is_not_labelled_and_the_pass_goes_on(group: dict[str, Any]) -> None:
    fake = api("ControllerGroup", "BrokerGroup")
    pods(fake)
    fake.fail_on("patch", "Pod", "broker-a-1", status=404)
    run_pass(fake)  # no error: the pod is gone since the pass listed it (a roll step or a fence deleted it)
    assert group["policy_runs"] == 1
    assert body(fake, "Pod", "broker-a-2")["metadata"]["labels"][LABEL_ROLE] == "slave"


def test_a_master_change_is_one_event(group: dict[str, Any]) -> None:
    fake = api("ControllerGroup", "BrokerGroup")
    pods(fake)
    run_pass(fake)
    moved = healthy()
    replicas = tuple(
        ReplicaObservation(r.name, r.address, True, broker_id=r.broker_id, is_master=r.broker_id == 2, max_offset=10)
        for r in moved.replicas
    )
    group["state"] = GroupState(
        **{**moved.__dict__, "master_broker_id": 2, "master_address": ADDR[1], "master_epoch": 2, "replicas": replicas}
    )
    run_pass(fake)
    run_pass(fake)
    assert [e["reason"] for e in group["events"] if e["reason"] != "ConfigApplied"] == ["MasterChanged"]
    assert body(fake, "Pod", "broker-a-1")["metadata"]["labels"][LABEL_ROLE] == "master"


# --- controller pass ---


class Controllers:
    """Stands in for the remoting client's leader lookup: the answer, or the failure, is the test's."""

    def __init__(self, leader_id: str | None) -> None:
        self.leader_id = leader_id

    async def find_controller_leader(self, addrs: list[str], **_: Any) -> ControllerMetadata:
        if self.leader_id is None:
            raise NoControllerLeader("no controller answers")
        return ControllerMetadata(addrs[0], "group", self.leader_id, addrs[0], True, {})


def controller_pods(fake: FakeApi, ready: int, total: int = 1) -> None:
    for i in range(total):
        fake.put(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"rocketmq-ctl-{i}",
                    "namespace": NS,
                    "labels": {LABEL_GROUP: "rocketmq-ctl", "app.kubernetes.io/component": "controller"},
                },
                "status": {"conditions": [{"type": "Ready", "status": "True" if i < ready else "False"}]},
            }
        )


@pytest.mark.parametrize(
    ("leader_id", "ready", "want"),
    [
        ("n0", 1, ("True", "LeaderElected", "rocketmq-ctl-0", "Running")),
        (None, 1, ("False", "NoLeader", None, "NoLeader")),
        (None, 0, ("False", "NoLeader", None, "Pending")),
    ],
)
def test_controller_pass_writes_leader_and_ready_once(leader_id: str | None, ready: int, want: tuple[Any, ...]) -> None:
    fake = api("ControllerGroup")
    controller_pods(fake, ready)
    cg = body(fake, "ControllerGroup", "rocketmq-ctl")
    asyncio.run(controller_pass(fake, Controllers(leader_id), cg))  # type: ignore[arg-type]
    status = body(fake, "ControllerGroup", "rocketmq-ctl")["status"]
    assert (*conditions({"status": status})["Ready"], status.get("leader"), status["phase"]) == want
    assert status["readyReplicas"] == ready
    assert status["nameServers"] == ["rocketmq-ctl-0.rocketmq-ctl-headless.ns.svc:9876"]
    before = fake.writes
    asyncio.run(controller_pass(fake, Controllers(leader_id), body(fake, "ControllerGroup", "rocketmq-ctl")))  # type: ignore[arg-type]
    assert fake.writes == before  # nothing changed, nothing written


def test_controller_pass_on_an_invalid_spec_says_not_ready() -> None:
    fake = api()
    fake.put(dict(DOCS["ControllerGroup"], spec={**DOCS["ControllerGroup"]["spec"], "replicas": 2}))
    asyncio.run(controller_pass(fake, Controllers("n0"), body(fake, "ControllerGroup", "rocketmq-ctl")))  # type: ignore[arg-type]
    assert conditions(body(fake, "ControllerGroup", "rocketmq-ctl")) == {"Ready": ("False", "InvalidSpec")}


# --- the topics pass (its calls to the brokers are control.topics', tested in test_topics_executor.py) ---


def topics_pass(fake: FakeApi, report: AssertReport, monkeypatch: pytest.MonkeyPatch) -> bool:
    async def assert_group(*_: Any, **__: Any) -> AssertReport:
        return report

    monkeypatch.setattr(kube_topics, "assert_group", assert_group)
    bg = validated(body(fake, "BrokerGroup", "broker-a")).resource
    assert isinstance(bg, BrokerGroup)
    return asyncio.run(kube_topics.reassert_topics(fake, None, OperatorMetrics(), bg, NS, healthy(), GroupMemory()))  # type: ignore[arg-type]


def test_topics_pass_reports_placements_once_and_keeps_the_transition_time(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = api("BrokerGroup", "Topic", "ConsumerGroup")
    missing = AssertReport("broker-a", ADDR[0], errors=["UPDATE_AND_CREATE_TOPIC: refused"])
    assert topics_pass(fake, missing, monkeypatch) is False
    topic = body(fake, "Topic", "orders")["status"]
    assert (topic["ready"], topic["conditions"][0]["reason"]) == (False, "Missing")
    # Still not ready, for another reason: a new message, the same lastTransitionTime.
    long_ago = "2000-01-01T00:00:00Z"
    topic["conditions"][0]["lastTransitionTime"] = long_ago
    asyncio.run(fake.patch_status("Topic", NS, "orders", topic))
    refused = AssertReport("broker-a", ADDR[0], refusals=[Refusal("orders", "queues cannot shrink")])
    topics_pass(fake, refused, monkeypatch)
    ready = body(fake, "Topic", "orders")["status"]["conditions"][0]
    assert (ready["reason"], ready["message"], ready["lastTransitionTime"]) == (
        "Refused",
        "queues cannot shrink",
        long_ago,
    )

    here = AssertReport(
        "broker-a",
        ADDR[0],
        asserted=True,
        topics={"orders": TopicConfigInfo("orders", 8, 8)},
        consumer_groups={"orders-readers": SubscriptionGroupInfo("orders-readers")},
    )
    assert topics_pass(fake, here, monkeypatch) is True
    topic = body(fake, "Topic", "orders")["status"]
    assert topic["ready"] is True and topic["brokerGroups"] == ["broker-a"]
    assert topic["placements"] == [
        {
            "brokerGroup": "broker-a",
            "master": ADDR[0],
            "exists": True,
            "readQueueNums": 8,
            "writeQueueNums": 8,
            "perm": 6,
        }
    ]
    assert body(fake, "ConsumerGroup", "orders-readers")["status"]["ready"] is True
    assert topic["conditions"][0]["lastTransitionTime"] != long_ago  # the status flipped

    before = fake.writes
    assert topics_pass(fake, here, monkeypatch) is True
    assert fake.writes == before  # nothing changed: no write


def test_topics_pass_stops_on_a_refused_status_write_and_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = api("BrokerGroup", "Topic", "ConsumerGroup")
    here = AssertReport("broker-a", ADDR[0], asserted=True, topics={"orders": TopicConfigInfo("orders", 8, 8)})
    fake.fail_on("patch_status", "Topic", status=500)  # a refusal (a conflict is merged and sent again)
    with pytest.raises(KubeError):
        topics_pass(fake, here, monkeypatch)
    assert "status" not in body(fake, "Topic", "orders")
    topics_pass(fake, here, monkeypatch)
    assert body(fake, "Topic", "orders")["status"]["ready"] is True


# --- rolling restarts and hot keys on Kubernetes ---


def with_revisions(fake: FakeApi, pod_revisions: dict[int, str], update_revision: str) -> None:
    """What the StatefulSet controller does: name the template's revision and stamp pods with theirs."""
    sts = body(fake, "StatefulSet", "broker-a")
    sts["metadata"].setdefault("generation", 1)
    sts["status"] = {"observedGeneration": sts["metadata"]["generation"], "updateRevision": update_revision}
    fake.put(sts)
    for i, rev in pod_revisions.items():
        pod = body(fake, "Pod", f"broker-a-{i}") if (("Pod", NS, f"broker-a-{i}") in fake.objects) else None
        if pod is None:  # recreated by the StatefulSet after the roll deleted it
            pods(fake, only=i)
            pod = body(fake, "Pod", f"broker-a-{i}")
        pod["metadata"]["labels"]["controller-revision-hash"] = rev
        fake.put(pod)


def fake_switchover(monkeypatch: pytest.MonkeyPatch, caller: Any) -> list[Any]:
    """The switchover operation as ``caller`` (a module) calls it: each call's target broker id; an exception put
    first in the list is raised by the next call instead."""
    calls: list[Any] = []

    async def switchover(
        client: Any,
        controllers: Any,
        cluster: str,
        name: str,
        endpoints: Any,
        target: int,
        *,
        min_in_sync_replicas: int,
    ) -> Any:
        assert min_in_sync_replicas >= 1  # the group's spec value, which the unfence gives back
        calls.append(target)
        if isinstance(calls[0], Exception):
            raise calls.pop(0)
        return SimpleNamespace(write_pause_s=0.2, epoch=2)

    async def nothing(*_: Any, **__: Any) -> None:
        return None

    if hasattr(caller, "switchover_group"):  # the Kubernetes passes: the group's switchover calls this one
        monkeypatch.setattr(control_switchover, "switchover", switchover)
    else:
        monkeypatch.setattr(caller, "switchover", switchover)
    return calls


@pytest.fixture
def switched(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The switchover as the roll calls it."""
    return fake_switchover(monkeypatch, control_roll)


def test_a_new_revision_rolls_slaves_first_then_switches_over_then_restarts_the_old_master(
    group: dict[str, Any], switched: list[Any]
) -> None:
    fake = api("ControllerGroup", "BrokerGroup")
    pods(fake)
    asyncio.run(reconcile(fake, body(fake, "BrokerGroup", "broker-a")))  # type: ignore[arg-type]
    brokers = FakeBrokers()
    memory = GroupMemory()
    with_revisions(fake, {0: "r1", 1: "r1", 2: "r1"}, "r2")

    run_pass(fake, brokers, memory)
    assert fake.writes_of("delete") == [("Pod", "broker-a-2")]
    rollout = body(fake, "BrokerGroup", "broker-a")["status"]["rollout"]
    assert rollout["phase"] == "Rolling" and rollout["currentStep"].startswith("restart broker-a-2")
    run_pass(fake, brokers, memory)  # the pod is not back yet: nothing else is restarted
    assert fake.writes_of("delete") == [("Pod", "broker-a-2")]
    assert body(fake, "BrokerGroup", "broker-a")["status"]["rollout"]["reason"] == "WaitingForReplica"

    with_revisions(fake, {2: "r2"}, "r2")
    run_pass(fake, brokers, memory)
    assert fake.writes_of("delete")[-1] == ("Pod", "broker-a-1")
    with_revisions(fake, {1: "r2"}, "r2")
    run_pass(fake, brokers, memory)
    assert len(switched) == 1 and switched[0] in (2, 3)  # the master last, after a planned switchover
    assert len(fake.writes_of("delete")) == 2
    master_is(group, switched[0])
    run_pass(fake, brokers, memory)
    assert [name for _, name in fake.writes_of("delete")] == ["broker-a-2", "broker-a-1", "broker-a-0"]
    with_revisions(fake, {0: "r2"}, "r2")
    run_pass(fake, brokers, memory)
    rollout = body(fake, "BrokerGroup", "broker-a")["status"]["rollout"]
    assert (rollout["phase"], rollout["restarts"], rollout["switchovers"]) == ("Complete", 3, 1)
    assert sorted(rollout["replicasDone"]) == ["broker-a-0", "broker-a-1", "broker-a-2"]
    assert [e["reason"] for e in group["events"]].count("RollingUpdate") == 4  # 3 restarts, 1 switchover
    before = fake.writes
    run_pass(fake, brokers, memory)
    assert fake.writes == before  # complete: nothing more is written


def test_no_revision_is_compared_until_the_statefulset_controller_saw_the_spec(group: dict[str, Any]) -> None:
    fake = api("ControllerGroup", "BrokerGroup")
    pods(fake)
    asyncio.run(reconcile(fake, body(fake, "BrokerGroup", "broker-a")))  # type: ignore[arg-type]
    with_revisions(fake, {0: "r1", 1: "r1", 2: "r1"}, "r2")
    sts = body(fake, "StatefulSet", "broker-a")
    sts["metadata"]["generation"] = 2  # a new spec the StatefulSet controller has not observed yet
    fake.put(sts)
    run_pass(fake)
    assert fake.writes_of("delete") == []


def test_a_hot_key_change_keeps_the_pod_template_and_is_applied_to_every_broker(group: dict[str, Any]) -> None:
    fake = api("ControllerGroup", "BrokerGroup")
    pods(fake)
    asyncio.run(reconcile(fake, body(fake, "BrokerGroup", "broker-a")))  # type: ignore[arg-type]
    template = body(fake, "StatefulSet", "broker-a")["spec"]["template"]
    brokers = FakeBrokers()
    memory = GroupMemory()
    run_pass(fake, brokers, memory)  # brokers started from this config: converged
    brokers.updates.clear()
    group["events"].clear()
    changed = body(fake, "BrokerGroup", "broker-a")
    changed["spec"]["quorum"]["minInSyncReplicas"] = 1
    fake.put(changed)
    asyncio.run(reconcile(fake, body(fake, "BrokerGroup", "broker-a")))  # type: ignore[arg-type]
    assert body(fake, "StatefulSet", "broker-a")["spec"]["template"] == template  # no new revision: no restart
    assert "minInSyncReplicas=1" in body(fake, "ConfigMap", "broker-a-config")["data"]["broker-a-0.conf"]
    run_pass(fake, brokers, memory)
    assert sorted(addr for addr, _ in brokers.updates) == sorted(ADDR.values())
    assert all(update == {"minInSyncReplicas": "1"} for _, update in brokers.updates)
    assert [e["reason"] for e in group["events"]].count("ConfigApplied") == 3
    run_pass(fake, brokers, memory)
    assert len(brokers.updates) == 3 and fake.writes_of("delete") == []  # read back equal: nothing more

    heavier = body(fake, "BrokerGroup", "broker-a")
    heavier["spec"]["jvm"]["heap"] = "2Gi"
    fake.put(heavier)
    asyncio.run(reconcile(fake, body(fake, "BrokerGroup", "broker-a")))  # type: ignore[arg-type]
    assert body(fake, "StatefulSet", "broker-a")["spec"]["template"] != template  # a restart-only change rolls


def test_a_pod_deleted_by_someone_else_mid_roll_is_waited_for_not_deleted_again(group: dict[str, Any]) -> None:
    fake = api("ControllerGroup", "BrokerGroup")
    pods(fake)
    asyncio.run(reconcile(fake, body(fake, "BrokerGroup", "broker-a")))  # type: ignore[arg-type]
    with_revisions(fake, {0: "r1", 1: "r1", 2: "r1"}, "r2")
    # The replication policy (or a user) deleted slave broker-a-1; its broker still answers while it shuts down.
    terminating = body(fake, "Pod", "broker-a-1")
    terminating["metadata"]["deletionTimestamp"] = "2026-11-24T00:00:00Z"
    fake.put(terminating)
    run_pass(fake)
    assert fake.writes_of("delete") == []  # neither deleted again nor another slave restarted meanwhile
    rollout = body(fake, "BrokerGroup", "broker-a")["status"]["rollout"]
    assert rollout["reason"] == "WaitingForSyncStateSet" and rollout["restarts"] == 0, rollout
    run_pass(fake)
    assert fake.writes_of("delete") == []
    del fake.objects[("Pod", NS, "broker-a-1")]
    with_revisions(fake, {1: "r2"}, "r2")  # the StatefulSet recreated it from the update revision
    run_pass(fake)
    assert fake.writes_of("delete") == [("Pod", "broker-a-2")]  # the roll goes on with the other slave


# --- storage expansion (core.storage, platforms/kubernetes/storage.py) ---


def pvc(
    fake: FakeApi,
    i: int,
    requested: str = "10Gi",
    capacity: str | None = None,
    cls: str | None = "fast",
    **status: Any,
) -> None:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": requested}}}
    if cls is not None:
        spec["storageClassName"] = cls
    fake.put(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {
                "name": f"data-broker-a-{i}",
                # The StatefulSet controller copies its selector's labels onto the claims it creates.
                "labels": {
                    LABEL_GROUP: "broker-a",
                    "app.kubernetes.io/component": "broker",
                    "app.kubernetes.io/instance": "broker-a",
                },
            },
            "spec": spec,
            "status": {"phase": "Bound", "capacity": {"storage": capacity or requested}, **status},
        }
    )


def storage_class(fake: FakeApi, name: str, expandable: bool | None) -> None:
    sc: dict[str, Any] = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name}}
    if expandable is not None:
        sc["allowVolumeExpansion"] = expandable
    fake.put(sc)


def set_size(fake: FakeApi, size: str) -> None:
    bg = body(fake, "BrokerGroup", "broker-a")
    bg["spec"]["storage"]["size"] = size
    fake.put(bg)


def claim(fake: FakeApi, i: int) -> dict[str, Any]:
    return body(fake, "PersistentVolumeClaim", f"data-broker-a-{i}")


def claim_patches(fake: FakeApi) -> list[str]:
    return [name for kind, name in fake.writes_of("patch") if kind == "PersistentVolumeClaim"]


def storage_condition(fake: FakeApi) -> dict[str, Any] | None:
    found = body(fake, "BrokerGroup", "broker-a").get("status", {}).get("conditions", [])
    return next((c for c in found if c["type"] == "StorageResized"), None)


def reasons(group: dict[str, Any]) -> list[str]:
    return [e["reason"] for e in group["events"] if e["reason"] != "ConfigApplied"]


def test_a_larger_size_grows_each_claim_in_place_and_reports_progress_from_the_claims(group: dict[str, Any]) -> None:
    fake = api("ControllerGroup", "BrokerGroup")
    pods(fake)
    storage_class(fake, "fast", True)
    for i in range(3):
        pvc(fake, i)
    pvc(fake, 3)  # left behind by an earlier scale-in (whenScaled: Retain): not this group's replica any more
    memory = GroupMemory()
    run_pass(fake, memory=memory)
    assert claim_patches(fake) == [] and storage_condition(fake) is None  # never resized: nothing to say

    set_size(fake, "20Gi")
    run_pass(fake, memory=memory)
    assert claim_patches(fake) == [
        "data-broker-a-0",
        "data-broker-a-1",
        "data-broker-a-2",
    ]
    assert all(claim(fake, i)["spec"]["resources"]["requests"]["storage"] == "20Gi" for i in range(3))
    assert claim(fake, 3)["spec"]["resources"]["requests"]["storage"] == "10Gi"
    cond = storage_condition(fake)
    assert cond is not None and (cond["status"], cond["reason"]) == ("False", "Resizing"), cond
    assert reasons(group).count("StorageExpansion") == 3 and "Resizing" in reasons(group)

    run_pass(fake, memory=memory)  # asked already: nothing patched again, progress read from the claims
    assert len(claim_patches(fake)) == 3
    cond = storage_condition(fake)
    assert cond is not None and "0/3 PVCs have 20Gi" in cond["message"], cond

    pvc(fake, 0, "20Gi")
    pvc(fake, 1, "20Gi", "10Gi", conditions=[{"type": "FileSystemResizePending", "status": "True"}])
    pvc(fake, 2, "20Gi", "10Gi", conditions=[{"type": "Resizing", "status": "True"}])
    run_pass(fake, memory=memory)
    cond = storage_condition(fake)
    assert cond is not None and cond["reason"] == "Resizing"
    assert "1/3 PVCs have 20Gi" in cond["message"] and "FileSystemResizePending" in cond["message"]
    assert "data-broker-a-2: volume being resized" in cond["message"]

    for i in range(3):
        pvc(fake, i, "20Gi")
    run_pass(fake, memory=memory)
    cond = storage_condition(fake)
    assert cond is not None and (cond["status"], cond["reason"]) == ("True", "Resized"), cond
    assert reasons(group).count("StorageResized") == 1
    assert conditions(body(fake, "BrokerGroup", "broker-a"))["Ready"] == ("True", "AllReplicasInSync")  # kept
    before = fake.writes
    run_pass(fake, memory=memory)
    assert fake.writes == before  # settled: nothing written


@pytest.mark.parametrize(
    ("cls", "expandable", "words"),
    [
        (None, None, "has no StorageClass"),  # the test node's static hostPath PVs
        ("fixed", False, "StorageClass fixed of PVC data-broker-a-0"),
        ("fixed", None, "StorageClass fixed of PVC data-broker-a-0"),  # allowVolumeExpansion unset: false
        (
            "gone",
            "missing",
            "StorageClass gone of PVC data-broker-a-0, data-broker-a-1, data-broker-a-2 does not exist",
        ),
    ],
)
def test_a_claim_that_cannot_grow_is_not_patched_and_status_says_why(
    group: dict[str, Any], cls: str | None, expandable: bool | str | None, words: str
) -> None:
    fake = api("ControllerGroup", "BrokerGroup")
    pods(fake)
    if cls is not None and expandable != "missing":
        storage_class(fake, cls, expandable)  # type: ignore[arg-type]
    for i in range(3):
        pvc(fake, i, cls=cls)
    set_size(fake, "20Gi")
    memory = GroupMemory()
    run_pass(fake, memory=memory)
    run_pass(fake, memory=memory)
    assert claim_patches(fake) == []
    cond = storage_condition(fake)
    assert cond is not None and (cond["status"], cond["reason"]) == ("False", "ExpansionNotSupported"), cond
    message = cond["message"]
    assert words in message and "spec.storage.size 20Gi" in message
    assert "allowVolumeExpansion: true" in message and "rule:" in message and "fix:" in message
    assert "back to 10Gi" in message
    warnings = [e for e in group["events"] if e["reason"] == "ExpansionNotSupported"]
    assert len(warnings) == 1 and warnings[0]["type"] == "Warning"  # said once, not every pass


def test_a_refused_claim_patch_is_a_condition_and_the_next_pass_goes_on(group: dict[str, Any]) -> None:
    fake = api("ControllerGroup", "BrokerGroup")
    pods(fake)
    storage_class(fake, "fast", True)
    for i in range(3):
        pvc(fake, i)
    set_size(fake, "20Gi")
    fake.fail_on("patch", "PersistentVolumeClaim", "data-broker-a-1", status=422)
    run_pass(fake)  # no exception out of the pass
    assert claim(fake, 0)["spec"]["resources"]["requests"]["storage"] == "20Gi"
    assert claim(fake, 1)["spec"]["resources"]["requests"]["storage"] == "10Gi"
    assert claim(fake, 2)["spec"]["resources"]["requests"]["storage"] == "10Gi"  # stopped at the refusal
    cond = storage_condition(fake)
    assert cond is not None and cond["reason"] == "ResizeRefused", cond
    assert "data-broker-a-1" in cond["message"] and "HTTP 422" in cond["message"] and "fix:" in cond["message"]
    run_pass(fake)
    assert all(claim(fake, i)["spec"]["resources"]["requests"]["storage"] == "20Gi" for i in range(3))
    cond = storage_condition(fake)
    assert cond is not None and cond["reason"] == "Resizing", cond


@pytest.mark.parametrize(
    ("verb", "kind", "reason", "words"),
    [
        ("get", "StorageClass", "StorageClassUnreadable", "rbac.clusterRead"),
        ("list", "PersistentVolumeClaim", "ClaimsUnreadable", "persistentvolumeclaims"),
    ],
)
def test_a_forbidden_read_is_a_condition_and_nothing_is_patched(
    group: dict[str, Any], verb: str, kind: str, reason: str, words: str
) -> None:
    fake = api("ControllerGroup", "BrokerGroup")
    pods(fake)
    storage_class(fake, "fast", True)
    for i in range(3):
        pvc(fake, i)
    set_size(fake, "20Gi")
    fake.fail_on(verb, kind, status=403)
    run_pass(fake)
    assert claim_patches(fake) == []
    cond = storage_condition(fake)
    assert cond is not None and cond["reason"] == reason and "HTTP 403" in cond["message"], cond
    assert words in cond["message"] and "fix:" in cond["message"]
    assert group["policy_runs"] == 1  # the rest of the pass ran


def test_a_smaller_size_is_refused_and_the_reconcile_keeps_the_claim_template(group: dict[str, Any]) -> None:
    fake = api("ControllerGroup", "BrokerGroup")
    pods(fake)
    asyncio.run(reconcile(fake, body(fake, "BrokerGroup", "broker-a")))  # type: ignore[arg-type]
    storage_class(fake, "fast", True)
    for i in range(3):
        pvc(fake, i)
    set_size(fake, "5Gi")
    outcome = asyncio.run(reconcile(fake, body(fake, "BrokerGroup", "broker-a")))  # type: ignore[arg-type]
    assert outcome.blocked_reason is None
    template = body(fake, "StatefulSet", "broker-a")["spec"]["volumeClaimTemplates"][0]
    assert template["spec"]["resources"]["requests"]["storage"] == "10Gi"
    run_pass(fake)
    assert claim_patches(fake) == []
    cond = storage_condition(fake)
    assert cond is not None and cond["reason"] == "ShrinkRefused", cond
    assert "spec.storage.size 5Gi" in cond["message"] and "back to 10Gi or more" in cond["message"]


# --- the switchover before a node drain (core.drain, platforms/kubernetes/drain.py) ---


def node(fake: FakeApi, name: str, cordoned: bool = False) -> None:
    spec = {"unschedulable": True} if cordoned else {}
    fake.put({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "spec": spec})


def placed(fake: FakeApi, cordoned: tuple[str, ...] = ()) -> None:
    """Pods broker-a-<i> on nodes n<i>; the named nodes cordoned."""
    pods(fake)
    for i in range(3):
        pod = body(fake, "Pod", f"broker-a-{i}")
        pod["spec"] = {"nodeName": f"n{i}"}
        fake.put(pod)
        node(fake, f"n{i}", f"n{i}" in cordoned)


def drain_condition(fake: FakeApi) -> dict[str, Any] | None:
    found = body(fake, "BrokerGroup", "broker-a").get("status", {}).get("conditions", [])
    return next((c for c in found if c["type"] == "DrainSwitchover"), None)


@pytest.fixture
def switchovers(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The switchover as the drain pass calls it."""
    return fake_switchover(monkeypatch, kube_drain)


def master_is(group: dict[str, Any], broker_id: int, names: range = range(3)) -> None:
    """The observation after an election of ``broker_id``, with the replicas of ``names`` all in sync."""
    group["state"] = GroupState(
        **{
            **healthy().__dict__,
            "master_broker_id": broker_id,
            "master_address": ADDR[broker_id - 1],
            "master_epoch": 2,
            "sync_state_set": tuple(i + 1 for i in names),
            "replicas": tuple(
                ReplicaObservation(
                    f"broker-a-{i}", ADDR[i], True, broker_id=i + 1, is_master=i + 1 == broker_id, max_offset=10
                )
                for i in names
            ),
        }
    )


def test_a_cordoned_master_node_switches_the_master_over_once(group: dict[str, Any], switchovers: list[Any]) -> None:
    fake = api("ControllerGroup", "BrokerGroup")
    placed(fake)
    memory = GroupMemory()
    run_pass(fake, memory=memory)
    assert switchovers == [] and drain_condition(fake) is None  # schedulable: nothing to do, nothing said

    node(fake, "n0", cordoned=True)  # `kubectl drain n0` cordons first
    node(fake, "n2", cordoned=True)  # and broker-a-2's node is on its way out too
    run_pass(fake, memory=memory)
    assert switchovers == [2]  # broker-a-1 on n1: in sync, caught up, on a schedulable node
    cond = drain_condition(fake)
    assert cond is not None and (cond["status"], cond["reason"]) == ("True", "Switched"), cond
    assert "broker-a-0 on cordoned node n0 to broker-a-1" in cond["message"]
    assert reasons(group).count("DrainSwitchover") == 1
    assert group["policy_runs"] == 2

    master_is(group, 2)  # the controller elected it
    run_pass(fake, memory=memory)
    run_pass(fake, memory=memory)
    assert switchovers == [2]  # on a schedulable node now: no loop
    cond = drain_condition(fake)
    assert cond is not None and cond["reason"] == "Switched"  # the record of the last one stays


def test_no_slave_on_a_schedulable_node_holds_says_so_once_and_clears(
    group: dict[str, Any], switchovers: list[Any]
) -> None:
    fake = api("ControllerGroup", "BrokerGroup")
    placed(fake, cordoned=("n0", "n1", "n2"))
    memory = GroupMemory()
    run_pass(fake, memory=memory)
    run_pass(fake, memory=memory)
    assert switchovers == [] and fake.writes_of("delete") == []  # nothing destructive
    cond = drain_condition(fake)
    assert cond is not None and (cond["status"], cond["reason"]) == ("False", "NoSchedulableTarget"), cond
    assert "node n0" in cond["message"] and "uncordon n0" in cond["message"] and "add a node" in cond["message"]
    warnings = [e for e in group["events"] if e["reason"] == "DrainNoSchedulableTarget"]
    assert len(warnings) == 1 and warnings[0]["type"] == "Warning"
    assert group["policy_runs"] == 2

    node(fake, "n0")  # uncordoned
    run_pass(fake, memory=memory)
    assert drain_condition(fake) is None and switchovers == []
    before = fake.writes
    run_pass(fake, memory=memory)
    assert fake.writes == before


def test_a_forbidden_node_read_is_a_condition_not_an_exception(group: dict[str, Any], switchovers: list[Any]) -> None:
    fake = api("ControllerGroup", "BrokerGroup")
    placed(fake, cordoned=("n0",))
    fake.fail_on("get", "Node", status=403, times=100)
    run_pass(fake)
    assert switchovers == []
    cond = drain_condition(fake)
    assert cond is not None and cond["reason"] == "NodeUnknown", cond
    assert "node n0" in cond["message"] and "HTTP 403" in cond["message"] and "rbac.clusterRead" in cond["message"]
    assert group["policy_runs"] == 1


def test_a_slave_node_that_cannot_be_read_is_no_target(group: dict[str, Any], switchovers: list[Any]) -> None:
    fake = api("ControllerGroup", "BrokerGroup")
    placed(fake, cordoned=("n0",))
    fake.fail_on("get", "Node", "n1", status=500, times=100)
    run_pass(fake)
    assert switchovers == [3]  # broker-a-2 on n2, the one slave known to be on a schedulable node


@pytest.mark.parametrize(
    ("annotations", "rollout", "reason"),
    [
        ({"rocketmq-operator.dev/rollout-paused": "true"}, None, "Paused"),
        ({}, {"targetRevision": "abc", "phase": "Waiting"}, "RolloutInProgress"),
    ],
)
def test_a_pause_or_a_roll_in_progress_holds_the_switchover(
    group: dict[str, Any],
    switchovers: list[Any],
    annotations: dict[str, str],
    rollout: dict[str, Any] | None,
    reason: str,
) -> None:
    fake = api("ControllerGroup", "BrokerGroup")
    placed(fake, cordoned=("n0",))
    bg = body(fake, "BrokerGroup", "broker-a")
    bg["metadata"]["annotations"] = annotations
    if rollout is not None:
        bg["status"] = {"rollout": rollout}
    fake.put(bg)
    run_pass(fake)
    assert switchovers == []
    cond = drain_condition(fake)
    assert cond is not None and (cond["status"], cond["reason"]) == ("False", reason), cond
    assert "node n0" in cond["message"] and "fix:" in cond["message"]


def test_a_failed_switchover_is_a_condition_and_is_tried_again(group: dict[str, Any], switchovers: list[Any]) -> None:
    fake = api("ControllerGroup", "BrokerGroup")
    placed(fake, cordoned=("n0",))
    switchovers.append(OperationRefused("switchover refused (TargetNotInSync): broker 2 is not in the SyncStateSet"))
    memory = GroupMemory()
    run_pass(fake, memory=memory)
    cond = drain_condition(fake)
    assert cond is not None and (cond["status"], cond["reason"]) == ("False", "SwitchoverFailed"), cond
    assert "TargetNotInSync" in cond["message"] and "fix:" in cond["message"]
    run_pass(fake, memory=memory)
    cond = drain_condition(fake)
    assert cond is not None and cond["reason"] == "Switched" and switchovers == [2, 2]


class FakeController(FakeBrokers):
    """The controller's part a scale-in uses: CLEAN_BROKER_DATA, refused while it holds a broker alive."""

    def __init__(self) -> None:
        super().__init__()
        self.alive: set[int] = set()
        self.forgotten: list[list[int]] = []

    async def find_controller_leader(self, controllers: Any, **_: Any) -> Any:
        return ControllerMetadata("ctl:9878", None, "1", "ctl:9878", True, {})

    async def clean_broker_data(self, leader: str, cluster: str, group: str, ids: list[int], **_: Any) -> None:
        if self.alive & set(ids):
            raise OSError(f"brokers {sorted(self.alive & set(ids))} are still alive")
        self.forgotten.append(list(ids))


def sts_patches(fake: FakeApi) -> list[tuple[str, str]]:
    return [w for w in fake.writes_of("patch") if w[0] == "StatefulSet"]


def test_a_scale_in_switches_the_master_off_the_removed_ordinal_then_shrinks_the_statefulset_itself(
    group: dict[str, Any], switched: list[Any]
) -> None:
    """3 → 2 with the master on broker-a-2: the reconciler keeps 3 pods, the roll switches over to a kept
    replica, then lowers the StatefulSet to 2 (never removing a master), and the controller forgets broker 3
    once its pod is gone (refused while it is alive); then the kept replicas roll for totalReplicas=2."""
    fake = api("ControllerGroup", "BrokerGroup")
    pods(fake)
    asyncio.run(reconcile(fake, body(fake, "BrokerGroup", "broker-a")))  # type: ignore[arg-type]
    master_is(group, 3)
    smaller = body(fake, "BrokerGroup", "broker-a")
    smaller["spec"]["replicas"] = 2
    smaller["spec"]["quorum"] = {"inSyncReplicas": 2, "minInSyncReplicas": 1}
    fake.put(smaller)
    asyncio.run(reconcile(fake, body(fake, "BrokerGroup", "broker-a")))  # type: ignore[arg-type]
    sts = body(fake, "StatefulSet", "broker-a")
    assert sts["spec"]["replicas"] == 3  # the reconciler never removes a replica: the roll does
    assert "broker-a-2.conf" in body(fake, "ConfigMap", "broker-a-config")["data"]  # it keeps its config meanwhile
    assert sts["spec"]["persistentVolumeClaimRetentionPolicy"]["whenScaled"] == "Retain"  # reclaimPolicy Retain
    with_revisions(fake, {0: "r1", 1: "r1", 2: "r1"}, "r2")
    controller = FakeController()
    memory = GroupMemory()

    run_pass(fake, controller, memory)
    assert switched == [1] or switched == [2], switched  # the master first moves to a kept replica
    assert sts_patches(fake) == [] and fake.writes_of("delete") == []
    master_is(group, switched[0])
    run_pass(fake, controller, memory)
    assert sts_patches(fake) == [("StatefulSet", "broker-a")]
    assert body(fake, "StatefulSet", "broker-a")["spec"]["replicas"] == 2
    rollout = body(fake, "BrokerGroup", "broker-a")["status"]["rollout"]
    assert rollout["removedBrokerIds"] == [3], rollout

    # The reconciler follows the StatefulSet's new count; broker-a-2's pod terminates while its broker answers.
    asyncio.run(reconcile(fake, body(fake, "BrokerGroup", "broker-a")))  # type: ignore[arg-type]
    assert body(fake, "StatefulSet", "broker-a")["spec"]["replicas"] == 2
    terminating = body(fake, "Pod", "broker-a-2")
    terminating["metadata"]["deletionTimestamp"] = "2026-11-25T00:00:00Z"
    fake.put(terminating)
    controller.alive = {3}
    run_pass(fake, controller, memory)
    assert controller.forgotten == []  # its pod is still there
    del fake.objects[("Pod", NS, "broker-a-2")]
    master_is(group, switched[0], range(2))
    run_pass(fake, controller, memory)
    assert controller.forgotten == []  # the controller still holds it alive: tried again
    assert body(fake, "BrokerGroup", "broker-a")["status"]["rollout"]["removedBrokerIds"] == [3]
    controller.alive = set()
    run_pass(fake, controller, memory)
    assert controller.forgotten == [[3]]
    rollout = body(fake, "BrokerGroup", "broker-a")["status"]["rollout"]
    assert rollout["removedBrokerIds"] == [] and rollout["currentStep"].startswith("restart broker-a-"), rollout
    assert [name for _, name in fake.writes_of("delete")] == [f"broker-a-{2 - switched[0]}"]  # the slave first


# --- the GitOps switchover annotation names a pod (or a broker id) ---


@pytest.mark.parametrize(
    ("wanted", "elected", "reason", "says"),
    [
        ("broker-a-2", [2], "Switched", "master is now broker 2"),  # the pod: the id the controller gave it
        ("3", [3], "Switched", "master is now broker 3"),  # a broker id, as before
        ("broker-a-9", [], "InvalidTarget", "neither a broker id nor a replica of the group (replicas: broker-a-0"),
    ],
)
def test_the_switchover_annotation_names_a_pod_or_a_broker_id(
    group: dict[str, Any], monkeypatch: pytest.MonkeyPatch, wanted: str, elected: list[int], reason: str, says: str
) -> None:
    # The controller assigns ids in registration order, not by ordinal: here broker-a-1 is 3 and broker-a-2 is 2.
    ids = {"broker-a-0": 1, "broker-a-1": 3, "broker-a-2": 2}
    group["state"] = dataclasses.replace(
        healthy(), replicas=tuple(dataclasses.replace(r, broker_id=ids[r.name]) for r in healthy().replicas)
    )
    calls: list[int] = []

    async def switchover(client: Any, controllers: Any, cluster: str, name: str, endpoints: Any, target: int,
                         **_: Any) -> Any:  # fmt: skip
        calls.append(target)
        return SimpleNamespace(new_master=target, epoch=2, write_pause_s=0.2)

    monkeypatch.setattr(control_switchover, "switchover", switchover)
    fake = api("ControllerGroup", "BrokerGroup")
    pods(fake)
    bg = body(fake, "BrokerGroup", "broker-a")
    bg["metadata"].setdefault("annotations", {})[group_pass.ANNOTATION_SWITCHOVER_TO] = wanted
    fake.put(bg)
    run_pass(fake)
    assert calls == elected
    after = body(fake, "BrokerGroup", "broker-a")
    cond = next(c for c in after["status"]["conditions"] if c["type"] == "Switchover")
    assert cond["reason"] == reason and says in cond["message"], cond
    assert group_pass.ANNOTATION_SWITCHOVER_TO not in (after["metadata"].get("annotations") or {})


def test_a_switchover_refused_for_now_keeps_the_annotation_says_so_once_and_switches_later(
    group: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The e2e node-loss test asked for a switchover right after moving the controller's pod: "the controller quorum
    # is unreadable", the annotation was cleared, and nothing ever switched.
    answers: list[Any] = [
        control_switchover.OperationRefused("switchover refused (ControllerUnavailable): unreadable", transient=True),
        control_switchover.OperationRefused("switchover refused (ControllerUnavailable): unreadable", transient=True),
        SimpleNamespace(new_master=2, epoch=3, write_pause_s=0.2),
    ]

    async def switchover(*_: Any, **__: Any) -> Any:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(control_switchover, "switchover", switchover)
    fake = api("ControllerGroup", "BrokerGroup")
    pods(fake)
    bg = body(fake, "BrokerGroup", "broker-a")
    bg["metadata"].setdefault("annotations", {})[group_pass.ANNOTATION_SWITCHOVER_TO] = "2"
    fake.put(bg)
    for _ in range(2):
        run_pass(fake)
        after = body(fake, "BrokerGroup", "broker-a")
        cond = next(c for c in after["status"]["conditions"] if c["type"] == "Switchover")
        assert cond["reason"] == "Waiting" and "kept" in cond["message"], cond
        assert after["metadata"]["annotations"][group_pass.ANNOTATION_SWITCHOVER_TO] == "2"
    run_pass(fake)
    after = body(fake, "BrokerGroup", "broker-a")
    cond = next(c for c in after["status"]["conditions"] if c["type"] == "Switchover")
    assert cond["reason"] == "Switched" and answers == [], cond
    assert group_pass.ANNOTATION_SWITCHOVER_TO not in (after["metadata"].get("annotations") or {})


def test_the_kubernetes_pass_runs_the_one_pass(group: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The steps of control.group_pass, in its order, on a healthy group with nothing asked: every one but the
    planned switchover (tests/unit/test_group_pass.py tests the order itself)."""
    records: list[one_pass.PassRecord] = []
    real = group_pass.run_group_pass

    async def recording(steps: Any, **kwargs: Any) -> one_pass.PassRecord:
        records.append(await real(steps, **kwargs))
        return records[-1]

    monkeypatch.setattr(group_pass, "run_group_pass", recording)
    fake = api("ControllerGroup", "BrokerGroup")
    pods(fake)
    asyncio.run(reconcile(fake, body(fake, "BrokerGroup", "broker-a")))  # type: ignore[arg-type]
    acted = run_pass(fake)
    assert records[-1].steps == [s for s in one_pass.PASS_ORDER if s != one_pass.PLANNED_SWITCHOVER]
    # A pass that acted on the roles tells the timer to observe again at once (handlers.observe).
    assert acted is records[-1].acted is False

    async def acting(steps: Any, **kwargs: Any) -> one_pass.PassRecord:
        return one_pass.PassRecord(acted=True)

    monkeypatch.setattr(group_pass, "run_group_pass", acting)
    assert run_pass(fake) is True


# --- scheduled metadata backups (spec.backup; core.backup_schedule decides, tested in test_backup_schedule.py) ---


def backup_of(cluster: str = "DefaultCluster") -> MetadataBackup:
    topic = TopicEntry(read_queue_nums=4, write_queue_nums=4)
    user = UserEntry(username="app", password="pw-app")
    observed = GroupObservation("broker-a", "10.0.0.1:10911", {"orders": topic}, {"readers": {}}, [user], [])
    return build_backup(cluster, BackupSource(taken_at="2027-01-15T08:00:00Z"), [observed])


def backup_pass(fake: FakeApi, monkeypatch: pytest.MonkeyPatch, taken: list[Any], events: list[str]) -> None:
    async def take_backup(_client: Any, **kwargs: Any) -> MetadataBackup:
        taken.append(kwargs)
        return backup_of()

    monkeypatch.setattr(kube_backup, "take_backup", take_backup)
    monkeypatch.setattr(kopf, "info", lambda _b, reason, message: events.append(f"{reason}: {message}"))
    monkeypatch.setattr(kopf, "warn", lambda _b, reason, message: events.append(f"{reason}: {message}"))
    asyncio.run(controller_pass(fake, Controllers("n0"), body(fake, "ControllerGroup", "rocketmq-ctl")))  # type: ignore[arg-type]


def test_a_scheduled_backup_goes_into_a_secret_and_status_lists_it(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = api()
    fake.put(
        dict(DOCS["ControllerGroup"], spec={**DOCS["ControllerGroup"]["spec"], "backup": {"every": "1h", "keep": 2}})
    )
    controller_pods(fake, 1)
    taken: list[Any] = []
    events: list[str] = []
    backup_pass(fake, monkeypatch, taken, events)
    assert taken[0]["namesrv"] == ["rocketmq-ctl-0.rocketmq-ctl-headless.ns.svc:9876"]
    secret = body(fake, "Secret", "rocketmq-ctl-metadata-0")
    assert "ownerReferences" not in secret["metadata"]  # a backup outlives its ControllerGroup
    document = json.loads(base64.b64decode(secret["data"]["metadata.json"]))
    assert (
        document["cluster"] == "DefaultCluster" and document["groups"]["broker-a"]["users"][0]["password"] == "pw-app"
    )
    status = body(fake, "ControllerGroup", "rocketmq-ctl")["status"]["backup"]
    assert [(k["secret"], k["topics"], k["users"]) for k in status["kept"]] == [("rocketmq-ctl-metadata-0", 1, 1)]
    assert "pw-app" not in json.dumps(status) and not any("pw-app" in e for e in events)
    assert events == [
        "MetadataBackup: first backup of cluster DefaultCluster into Secret rocketmq-ctl-metadata-0: 1 topic(s), "
        "1 subscription group(s), 1 user(s)"
    ]
    backup_pass(fake, monkeypatch, taken, events)
    assert len(taken) == 1  # not due for an hour
    cg = body(fake, "ControllerGroup", "rocketmq-ctl")
    cg["metadata"]["annotations"] = {BACKUP_REQUEST_ANNOTATION: "2027-01-15T08:05:00Z"}
    fake.put(cg)
    backup_pass(fake, monkeypatch, taken, events)
    assert len(taken) == 2 and body(fake, "Secret", "rocketmq-ctl-metadata-1")
    status = body(fake, "ControllerGroup", "rocketmq-ctl")["status"]["backup"]
    assert [k["secret"] for k in status["kept"]] == ["rocketmq-ctl-metadata-1", "rocketmq-ctl-metadata-0"]
    assert status["lastRequest"] == "2027-01-15T08:05:00Z"
    backup_pass(fake, monkeypatch, taken, events)
    assert len(taken) == 2  # a request is answered once


def test_a_failed_backup_is_in_status_and_an_event_and_never_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = api()
    fake.put(dict(DOCS["ControllerGroup"], spec={**DOCS["ControllerGroup"]["spec"], "backup": {"every": "6h"}}))
    controller_pods(fake, 1)
    events: list[str] = []

    async def no_master(_client: Any, **_: Any) -> MetadataBackup:
        raise BackupError("broker-a: no master is registered with the name servers; rule: ...; fix: ...")

    monkeypatch.setattr(kube_backup, "take_backup", no_master)
    monkeypatch.setattr(kopf, "warn", lambda _b, reason, message: events.append(f"{reason}: {message}"))
    asyncio.run(controller_pass(fake, Controllers("n0"), body(fake, "ControllerGroup", "rocketmq-ctl")))  # type: ignore[arg-type]
    status = body(fake, "ControllerGroup", "rocketmq-ctl")["status"]
    assert status["backup"]["lastError"].startswith("broker-a: no master") and status["backup"]["kept"] == []
    assert events == [f"MetadataBackupFailed: first backup: {status['backup']['lastError']}"]
    assert status["phase"] == "Running"  # the pass went on
