"""Failover, pod deletion and a GitOps switchover of the quickstart group on the real node, measured as the
client sees it: every acknowledged message is read back afterwards from whichever replica is master then.

The producers and consumers run as pods of the operator image (``rocketmq-operator produce|consume``) and reach
the group through the name server address the operator publishes in the connection ConfigMap, as a user's job
would. The tests run in file order and each starts from, and leaves, a healthy group.
"""

from __future__ import annotations

import subprocess
import tarfile
import time
from pathlib import Path
from typing import Any

from e2e.e2e_helpers import kubectl_rocketmq
from rocketmq_operator.tools.noloss import reports_no_loss_failure


def _wait_new_master(group: Any, old: str) -> float:
    """Seconds from now until status names a master other than ``old`` (polled as fast as kubectl answers)."""
    started = time.monotonic()
    group.node.wait_for(f"a master other than {old}", lambda: group.master() not in (None, old), 300, 0.5)
    return time.monotonic() - started


def _assert_master_followed(group: Any, new: str, events_before: frozenset[str]) -> None:
    """Pod role labels, the -master Service and one MasterChanged Event follow the new master."""
    group.wait_healthy()
    roles = group.roles()
    assert roles[new] == "master" and sorted(r for r in roles.values()) == ["master", "slave", "slave"], roles
    ip = group.pods()[new]["status"]["podIP"]
    group.node.wait_for("the -master Service to point at the new master", lambda: group.master_endpoints() == [ip])
    history = group.status().get("history") or []
    assert history and history[-1]["toBrokerId"] == group.status()["master"]["brokerId"], history
    assert len(group.events("MasterChanged", since=events_before)) == 1, group.events("MasterChanged")


def test_sigkill_of_the_master_jvm_loses_no_acknowledged_message(quickstart: Any) -> None:
    group = quickstart
    group.wait_healthy()
    before = group.produce("produce-before-kill", 10_000, "--report-keys")
    assert before is not None and before["acknowledged"] > 0, before
    old = group.master()
    assert old is not None
    events_before = group.event_mark()
    offset_before = group.master_offset()

    # A producer keeps sending through the failover, as a user's application would.
    group.produce(
        "produce-through-kill", 3_000, "--rate", "150", "--timeout", "3", "--retries", "2", "--report-keys", wait=False
    )
    group.node.wait_for("the producer to be running", lambda: _pod_phase(group, "produce-through-kill") == "Running")
    group.wait_master_takes_writes(offset_before, "the producer's first sends stored by the master")
    group.kill_jvm(old)
    seconds = _wait_new_master(group, old)
    print(f"master SIGKILL -> status shows a new master in {seconds:.1f}s")
    during = group.tool_result("produce-through-kill")
    new = group.master()
    assert new is not None and new != old
    _assert_master_followed(group, new, events_before)

    consumed = group.consume_all("consume-after-kill", report_keys=True)
    acked = before["acknowledged"] + during["acknowledged"]
    sent = before["sent"] + during["sent"]
    assert consumed["body_mismatches"] == 0
    # By key: every acknowledged key read back (duplicates and failed sends that were stored anyway are allowed).
    # The counts below balance when a lost message hides behind a failed send that was stored.
    loss = reports_no_loss_failure([before, during], consumed)
    assert loss is None, loss
    assert acked <= consumed["unique"] <= sent, (consumed, during)
    # Sends that failed after their retries may or may not be stored: the count is bounded by both sides. When
    # none is in doubt, the order-independent digests (a sum mod 2^256, tools/digest.py) must match exactly.
    if acked == sent:
        digest = (int(before["acknowledged_digest"], 16) + int(during["acknowledged_digest"], 16)) % 2**256
        assert consumed["unique"] == acked and int(consumed["digest"], 16) == digest, consumed


FREEZE_S = 30.0


def start_ordinary_and_pinned(group: Any, tag: str, address: str, ordinary: int, pinned: int) -> tuple[str, str]:
    """Two producer pods, running once the master stores their first sends: an ordinary one (150 msg/s, 3 s
    timeout, 2 retries) and one pinned to ``address`` (`produce --pin-to`: it never looks the route up again, so
    whatever that master acknowledges after its deposition reaches a client). Returns their pod names."""
    offset_before = group.master_offset()
    names = (f"produce-through-{tag}", f"produce-pinned-{tag}")
    group.produce(
        names[0], ordinary, "--rate", "150", "--timeout", "3", "--retries", "2", "--report-keys", wait=False
    )  # fmt: skip
    group.produce(
        names[1], pinned, "--pin-to", address, "--rate", "40", "--timeout", "1", "--retries", "0",
        # a send to a hung (later gone) address waits out its 1 s timeout: enough in flight to keep the rate
        "--concurrency", "64", "--report-keys", wait=False,
    )  # fmt: skip
    for pod in names:
        group.node.wait_for(f"{pod} to be running", lambda pod=pod: _pod_phase(group, pod) == "Running")
    group.wait_master_takes_writes(offset_before, "the producers' first sends stored by the master")
    return names


def _frozen_master_trial(group: Any, tag: str, *, delete_operator: bool) -> None:
    """The master's container frozen for FREEZE_S under an ordinary producer and one pinned to the frozen master's
    address; with ``delete_operator`` the operator's pod is deleted right after the freeze. Asserts the old master
    was fenced (its pod replaced) and every acknowledged key of both producers is read back."""
    group.wait_healthy()
    old = group.master()
    status = group.status()
    address = (status.get("master") or {}).get("address")
    assert old is not None and address, status.get("master")
    old_uid = group.pods()[old]["metadata"]["uid"]
    events_before = group.event_mark()
    through, pinned = start_ordinary_and_pinned(group, tag, address, 7_500, 2_000)
    frozen_at = time.monotonic()
    state = group.freeze_container(old)
    try:
        if delete_operator:
            group.node.kubectl("-n", "rocketmq-operator", "delete", "pods", "--all", "--wait=false")
        seconds = _wait_new_master(group, old)
        print(f"{tag}: master container frozen -> status shows a new master in {seconds:.1f}s")
        # Held for 30 s, unless the container is gone before (the fence's pod deletion stopped it: nothing left
        # to thaw).
        group.node.wait_for(
            "the freeze to have lasted 30 s, or the frozen container to be gone",
            lambda: time.monotonic() - frozen_at >= FREEZE_S or not state.exists(),
            120,
            1,
        )
    finally:
        thawed = group.thaw(state)
    through_report = group.tool_result(through)
    pinned_report = group.tool_result(pinned)
    new = group.master()
    assert new is not None and new != old
    _assert_master_followed(group, new, events_before)
    replaced = group.pods()[old]["metadata"]["uid"] != old_uid
    print(
        f"{tag}: thawed a live container: {thawed}; {old} replaced: {replaced}; ordinary producer: "
        f"{through_report['acknowledged']}/{through_report['sent']} acknowledged, pauses "
        f"{through_report.get('ack_gaps')}; pinned to {address}: {pinned_report['acknowledged']}/"
        f"{pinned_report['sent']} acknowledged, failures {pinned_report.get('failures')}"
    )
    assert replaced, f"{old} was not fenced: its pod was never deleted"
    consumed = group.consume_all(f"consume-after-{tag}", report_keys=True)
    assert consumed["body_mismatches"] == 0
    loss = reports_no_loss_failure([through_report, pinned_report], consumed)
    assert loss is None, loss


def test_a_frozen_master_container_is_fenced_and_no_client_gets_an_acknowledgement_from_it(quickstart: Any) -> None:
    """A real hang on Kubernetes: the master's container frozen with the cgroup freezer for 30 s (sockets open, its
    node and kubelet fine) under two producers: an ordinary one, and one whose cached route still names the frozen
    master (`produce --pin-to`), which keeps sending to that address through the election and after the thaw, as
    an application with a long route poll does. The operator, which sees the pod only over the network, fences it
    (deletes the pod: the kubelet stops the frozen container) and elects another replica. No acknowledged key of
    either producer is missing afterwards: an acknowledgement from the deposed master would be lost to the
    truncation of its log (docs/fencing.md)."""
    _frozen_master_trial(quickstart, "freeze", delete_operator=False)


def test_a_frozen_master_is_fenced_by_an_operator_restarted_during_the_fault(quickstart: Any) -> None:
    """The same hang with the operator's pod deleted right after the freeze: the controller elects on its own (its
    10 s heartbeat timeout), and the new operator, whose memory is new, resumes from the master its status last
    named: that replica is a deposed master that does not answer, fenced before it can wake up as master of the
    old epoch (docs/fencing.md)."""
    _frozen_master_trial(quickstart, "freeze-restart", delete_operator=True)


def test_deleting_the_master_pod_moves_the_master_and_the_pdb_holds(quickstart: Any) -> None:
    group = quickstart
    group.wait_healthy()
    pdb = group.node.json("-n", group.ns, "get", "pdb", group.name)
    # Every replica but the master, one at a time (the master has a budget of its own, disjoint from this one).
    assert pdb["spec"]["minAvailable"] == group.replicas - 2, pdb["spec"]
    assert pdb["spec"]["selector"]["matchExpressions"][0]["operator"] == "NotIn", pdb["spec"]
    old = group.master()
    assert old is not None
    events_before = group.event_mark()
    group.node.kubectl("-n", group.ns, "delete", "pod", old, "--wait=false")
    seconds = _wait_new_master(group, old)
    print(f"master pod deleted -> status shows a new master in {seconds:.1f}s")
    new = group.master()
    assert new is not None
    _assert_master_followed(group, new, events_before)

    # The PodDisruptionBudget holds: with every replica healthy one eviction is allowed, a second is refused.
    group.node.wait_for(
        "the PDB to allow one disruption",
        lambda: (
            (group.node.json("-n", group.ns, "get", "pdb", group.name).get("status") or {}).get("disruptionsAllowed")
            == 1
        ),
    )
    slaves = sorted(n for n, r in group.roles().items() if r == "slave")
    evicted_uid = group.pods()[slaves[0]]["metadata"]["uid"]
    assert _evict(group, slaves[0]) == ""
    refused = _evict(group, slaves[1])
    assert "disruption budget" in refused.lower() or "429" in refused, refused
    # The evicted replica comes back as a new pod before the group counts as healthy again.
    group.node.wait_for(
        f"{slaves[0]} to be replaced",
        lambda: group.pods().get(slaves[0], {}).get("metadata", {}).get("uid") not in (None, evicted_uid),
    )
    group.wait_healthy()


def test_gitops_switchover_annotation(quickstart: Any) -> None:
    group = quickstart
    group.wait_healthy()
    status = group.status()
    old_id = status["master"]["brokerId"]
    target = next(m for m in status["syncStateSet"]["members"] if m != old_id)
    group.node.kubectl(
        "-n", group.ns, "annotate", "bg", group.name, f"rocketmq-operator.dev/switchover-to={target}"
    )  # fmt: skip

    def done() -> bool:
        doc = group.node.json("-n", group.ns, "get", "bg", group.name)
        annotations = doc["metadata"].get("annotations") or {}
        conds = {c["type"]: c for c in (doc.get("status") or {}).get("conditions", [])}
        return "rocketmq-operator.dev/switchover-to" not in annotations and "Switchover" in conds

    group.node.wait_for("the switchover to be done and the annotation cleared", done, timeout=180)
    conds = {c["type"]: c for c in group.status().get("conditions", [])}
    assert conds["Switchover"]["status"] == "True", conds["Switchover"]
    group.node.wait_for("status to show the new master", lambda: group.status()["master"]["brokerId"] == target)
    assert group.events("SwitchoverSwitched")
    group.wait_healthy()


def _plugin(group: Any, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return kubectl_rocketmq(group.node, group.ns, *args, timeout=timeout)


def test_kubectl_rocketmq_status_switchover_and_report_on_the_real_node(quickstart: Any, tmp_path: Path) -> None:
    """The plugin against the running operator and brokers: the status the operator wrote and the pods as they
    are, a switchover to a replica by name (the operator's switchover), and a report with the pods' logs."""
    group = quickstart
    group.wait_healthy()
    master = group.master()
    res = _plugin(group, "status", group.name)
    assert res.returncode == 0, res.stderr
    print(res.stdout)
    lines = res.stdout.splitlines()
    assert lines[0].startswith(f"brokergroup {group.ns}/{group.name}: phase ")
    master_row = next(line.split() for line in lines if line.split()[1:2] == [master])
    assert master_row[3] == "master", master_row
    assert "(no pod)" not in res.stdout  # the pods exist on the node and the plugin found them
    assert any("writable=yes" in line and f"master={master}" in line for line in lines), lines

    target = next(r["name"] for r in group.status()["replicas"] if r["name"] != master and r.get("inSync"))
    res = _plugin(group, "switchover", group.name, "--to", target, "--wait", "180")
    assert res.returncode == 0, (res.stdout, res.stderr)
    group.node.wait_for(f"status to name {target} master", lambda: group.master() == target, timeout=60)
    group.wait_healthy()

    report = tmp_path / "report.tar.gz"
    res = _plugin(group, "report", group.name, "-o", str(report))
    assert res.returncode == 0, res.stderr
    with tarfile.open(report) as tar:
        names = tar.getnames()
    assert any(target in n and n.endswith(".log") for n in names), names


def _pod_phase(group: Any, pod: str) -> str | None:
    doc = group.node.json("-n", group.ns, "get", "pod", pod)
    return (doc.get("status") or {}).get("phase")


def _evict(group: Any, pod: str) -> str:
    """POST an Eviction for ``pod``; '' when accepted, else the API server's refusal."""
    body = (
        f'{{"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {{"name": "{pod}", "namespace": "{group.ns}"}}}}'
    )
    path = f"/api/v1/namespaces/{group.ns}/pods/{pod}/eviction"
    try:
        group.node.kubectl("create", "--raw", path, "-f", "-", input=body)
    except AssertionError as exc:
        return str(exc)
    return ""
