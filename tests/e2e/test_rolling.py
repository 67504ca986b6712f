"""The changes that move a quickstart group's pods on the real cluster (the image roll and the drain, both on the
second quickstart: tests/e2e/conftest.py), each while a producer sends, each followed by a read-back of every
acknowledged key:

* a rolling update as a user starts one, a new broker image tag in the BrokerGroup: the operator deletes the
  broker pods one at a time in quorum-safe order (slaves first, the master last after a switchover), and
  `kubectl get bg` shows the progress; beside the remoting producer, RocketMQ 5's gRPC client (default settings)
  sends from the host through a Proxy's NodePort all along, and every key it got acknowledged is read back
  through the proxy;
* `kubectl drain` of the master's node (three nodes only): the operator switches the master to an in-sync slave on
  a schedulable node before the eviction can take it (the `<group>-master` PodDisruptionBudget holds the eviction
  until then), and the evicted pod starts again on another node (docs/rolling.md, "Switchover before a node drain").
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from e2e.e2e_node import node_count
from e2e.test_proxy import topic_and_group, wait_proxy_ready, wait_topic_ready
from real_parts import missing
from rocketmq_operator.tools.grpc_client import SteadyGrpcProducer, receive_keys
from rocketmq_operator.tools.noloss import missing_acknowledged

# `make test` runs the node faults first, alone, then the rest on two workers sharing the cluster (docs/testing.md
# "Stage 2"; the workers' groups: tests/conftest.py `E2E_WORKER_GROUPS`).

IN_FLIGHT = 8  # the producer's --concurrency: at most this many sends are unanswered at Ctrl-C
ROLL_PROXY, ROLL_PROXY_PORT, ROLL_TOPIC, ROLL_READERS = "proxy-b", 30082, "roll-grpc", "roll-grpc-readers"


def _roll_proxy(group: Any) -> str:
    """A Proxy of one replica in front of the group (NodePort ROLL_PROXY_PORT) and a Topic and ConsumerGroup of its
    own; returns the endpoint a client on the host uses."""
    proxy = {
        "apiVersion": "rocketmq-operator.dev/v1alpha1", "kind": "Proxy", "metadata": {"name": ROLL_PROXY},
        "spec": {"controllerRef": {"name": group.controller_group}, "clusterName": "DefaultCluster", "replicas": 1,
                 "service": {"type": "NodePort", "grpcNodePort": ROLL_PROXY_PORT},
                 "resources": {"requests": {"cpu": "100m"}}},  # as examples/proxy.yaml
    }  # fmt: skip
    manifest = topic_and_group(ROLL_TOPIC, ROLL_READERS) + "\n---\n" + json.dumps(proxy)
    group.node.kubectl("-n", group.ns, "apply", "-f", "-", input=manifest)
    wait_proxy_ready(group.node, group.ns, ROLL_PROXY, 1)
    wait_topic_ready(group.node, group.ns, ROLL_TOPIC)
    return f"{group.node.node_address()}:{ROLL_PROXY_PORT}"


def _rollout(group: Any) -> dict[str, Any]:
    return dict(group.status().get("rollout") or {})


def _when(event: dict[str, Any]) -> str:
    return str(event.get("eventTime") or event.get("lastTimestamp") or event["metadata"]["creationTimestamp"])


def test_an_image_tag_change_rolls_the_brokers_master_last_with_no_loss(second_quickstart: Any) -> None:
    group = second_quickstart
    group.wait_healthy()
    old_master = group.master()
    assert old_master is not None
    spec_image = group.pods()[old_master]["spec"]["containers"][0]["image"]
    new_image = spec_image.rpartition(":")[0] + ":rolled-e2e"
    # A new tag of the same image, made on the node: the registry a user would push to is not reachable here.
    group.node.tag_image(spec_image, new_image)
    events_before = group.event_mark()
    baseline = group.consume_all("consume-before-roll")  # the topic holds the earlier tests' messages too
    grpc = SteadyGrpcProducer(_roll_proxy(group), ROLL_TOPIC, rate=20.0, key_prefix="roll-grpc-")
    grpc.start()
    try:
        _roll(group, new_image, events_before, baseline, old_master)
    finally:
        grpc_records = grpc.stop()
    grpc_acked = {r.key for r in grpc_records if r.ok}
    grpc_failed = sorted({r.status for r in grpc_records if not r.ok})
    print(
        f"gRPC producer through {ROLL_PROXY}: {len(grpc_records)} sends, {len(grpc_acked)} acknowledged, {grpc_failed}"
    )
    got = receive_keys(grpc.endpoints, ROLL_READERS, ROLL_TOPIC, grpc_acked, idle_s=30)
    lost = missing_acknowledged(grpc_acked, got)
    assert not lost, f"{len(lost)} keys acknowledged through the proxy not read back: {sorted(lost)[:10]}"
    group.node.kubectl("-n", group.ns, "delete", "proxy", ROLL_PROXY)  # its JVM is not needed by the tests after


def _roll(
    group: Any,
    new_image: str,
    events_before: frozenset[str],
    baseline: dict[str, Any],
    old_master: str,
) -> None:
    offset_before = group.master_offset()

    # At most 40,000 (267 s); stopped with Ctrl-C once the roll is complete and the new master took sends.
    group.produce(
        "produce-through-roll", 40_000, "--rate", "150", "--timeout", "3", "--retries", "2",
        "--concurrency", str(IN_FLIGHT), "--report-keys", wait=False,
    )  # fmt: skip
    with group.interrupted_on_failure("produce-through-roll"):
        group.node.wait_for(
            "the producer to be running",
            lambda: (
                (group.node.json("-n", group.ns, "get", "pod", "produce-through-roll").get("status") or {}).get("phase")
                == "Running"
            ),
        )
        group.wait_master_takes_writes(offset_before, "the producer's first sends stored by the master")
        started = time.monotonic()
        patch = json.dumps({"spec": {"image": new_image}})
        group.node.kubectl("-n", group.ns, "patch", "bg", group.name, "--type", "merge", "-p", patch)

        shown: list[str] = []  # what `kubectl get bg` showed during the roll

        def complete() -> bool:
            table = group.node.kubectl("-n", group.ns, "get", "bg", group.name, "-o", "wide", "--no-headers")
            if table not in shown:
                shown.append(table)
            pods = group.pods()
            rolled = len(pods) == 3 and all(p["spec"]["containers"][0]["image"] == new_image for p in pods.values())
            return rolled and _rollout(group).get("phase") == "Complete"

        group.node.wait_for("the rolling update to complete", complete, timeout=900, interval=1)
        seconds = time.monotonic() - started
        print(f"image tag change -> rollout Complete in {seconds:.0f}s; kubectl get bg showed:\n" + "\n".join(shown))
        assert any(" Rolling " in line or " Waiting " in line for line in shown), shown

        rollout = _rollout(group)
        steps = [e["message"] for e in sorted(group.events("RollingUpdate", since=events_before), key=_when)]
        print("roll steps:\n" + "\n".join(steps))
        created = {name: p["metadata"]["creationTimestamp"] for name, p in group.pods().items()}
        switchovers = [i for i, s in enumerate(steps) if s.startswith("switchover ")]
        failovers = len(group.events("MasterChanged", since=events_before)) - rollout["switchovers"]
        # Never a restart of the master by the roll (strategy switchover): slaves only, the master after it moved.
        assert not any("restarting master" in s for s in steps), steps
        if switchovers:
            # The master last: the replica the roll's last switchover moved the master away from is replaced last.
            switched_from = steps[switchovers[-1]].split()[1]
            restarted_after = any(s.startswith(f"restart {switched_from}") for s in steps[switchovers[-1] + 1 :])
            assert restarted_after or created[switched_from] >= max(created.values()), (switched_from, created, steps)
        else:
            # Every step the roll took is said as an Event (said before its status is written, so a write cut off
            # after the API server stored it does not lose the step's Event).
            assert rollout["switchovers"] == 0, (
                f"the roll made {rollout['switchovers']} switchover(s), no Event: {steps}"
            )
            # Seen at load 46: the replication policy fenced the master (it did not answer for detectionSeconds)
            # after both slaves were rolled; its pod came back on the new revision, so no switchover was left to do.
            assert failovers >= 1, (rollout, steps)
        if failovers == 0:
            # No failover interfered: both slaves first, one at a time, then the switchover away from the master.
            slaves = sorted(name for name in group.pods() if name != old_master)
            assert sorted(s.split(":")[0] for s in steps[:2]) == [f"restart {name}" for name in slaves], steps
            assert steps[2].startswith(f"switchover {old_master} ->"), steps
        else:
            # Seen at load 49: the replication policy failed a master over mid-roll (it did not answer in time), so
            # the order of slaves depends on where the master went; the invariant is checked above.
            print(f"{failovers} failover(s) by the replication policy during the roll")

        # Sends after the roll: the last restarted pod is back and the master takes them.
        group.wait_master_takes_writes(group.master_offset(), "the master taking sends after the roll")
    # By key: every key acknowledged through the roll is read back (duplicates, failed sends that were stored
    # anyway and the sends in flight at Ctrl-C are allowed); the counts below cannot see a loss hidden by those.
    # `read_back` counts this producer's own keys (unique per producer pod), not a difference of totals: a
    # baseline read short of what the earlier tests had stored (at load 38 it was) made the difference larger
    # than what was sent.
    during, consumed, read_back = group.stop_and_read_back("produce-through-roll")
    # A send that failed after its retries may or may not be stored, and so may the sends in flight at Ctrl-C
    # (not counted in `sent`): bounded by both sides, exact when the read-back is what was acknowledged.
    in_flight = IN_FLIGHT if during.get("interrupted") else 0
    assert during["acknowledged"] <= read_back <= during["sent"] + in_flight, (during, baseline, consumed)
    complete_baseline = consumed["unique"] - baseline["unique"] == read_back
    if read_back == during["acknowledged"] and consumed["duplicates"] == baseline["duplicates"] and complete_baseline:
        digest = (int(consumed["digest"], 16) - int(baseline["digest"], 16)) % 2**256
        assert digest == int(during["acknowledged_digest"], 16)


@pytest.mark.node_fault
def test_a_drain_of_the_masters_node_moves_the_master_first_with_no_loss(second_quickstart: Any) -> None:
    if node_count() < 3:
        missing("a drain needs a schedulable node for the master (ROCKETMQ_OPERATOR_E2E_NODES unset or 3)")
    group = second_quickstart
    node = group.node
    group.wait_healthy()
    old_master = group.master()
    assert old_master is not None
    before = group.pods()
    drained = before[old_master]["spec"]["nodeName"]
    events_before = group.event_mark()
    offset_before = group.master_offset()
    group.produce(
        "produce-through-drain", 40_000, "--rate", "150", "--timeout", "3", "--retries", "2",
        "--concurrency", str(IN_FLIGHT), "--report-keys", wait=False,
    )  # fmt: skip
    with group.interrupted_on_failure("produce-through-drain"):
        group.wait_master_takes_writes(offset_before, "the producer's first sends stored by the master")
    try:
        # The group's pods only: the quickstart's one name server and the producer stay where they are (a
        # ControllerGroup of one replica has nowhere to go; its budget would hold a whole-node drain for ever).
        out = node.kubectl(
            "drain", drained, "--pod-selector", f"rocketmq-operator.dev/group={group.name}", "--ignore-daemonsets",
            "--delete-emptydir-data", "--timeout=600s", timeout=660,
        )  # fmt: skip
        print(f"kubectl drain {drained}:\n{out}")
        new_master = group.master()
        assert new_master is not None and new_master != old_master, group.status()
        after = group.pods()
        # Moved by the switchover while its pod still ran, not failed over after the eviction: the new master's
        # pod is the one it had before the drain, on a schedulable node, and one master change in all.
        assert after[new_master]["metadata"]["uid"] == before[new_master]["metadata"]["uid"], (before, after)
        assert after[new_master]["spec"]["nodeName"] != drained, after[new_master]["spec"]
        drain = group.condition("DrainSwitchover")
        assert (drain.get("status"), drain.get("reason")) == ("True", "Switched"), drain
        group.wait_healthy()
        placed = {name: pod["spec"]["nodeName"] for name, pod in group.pods().items()}
        assert drained not in placed.values(), placed  # the evicted pod started again elsewhere
        assert len(group.events("MasterChanged", since=events_before)) == 1, group.events("MasterChanged")
        group.wait_master_takes_writes(group.master_offset(), "the master taking sends after the drain")
    except BaseException:
        group.interrupt("produce-through-drain")
        raise
    finally:
        node.kubectl("uncordon", drained)
    during, _, read_back = group.stop_and_read_back("produce-through-drain")
    assert during["acknowledged"] > 0 and read_back >= during["acknowledged"], (during, read_back)
