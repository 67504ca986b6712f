"""The lease agent on a real node: a master cut off from its controller and from the operator, on a node whose
kubelet is stopped (nothing outside the pod can stop it), fences itself before another replica is elected, and no
client gets an acknowledgement from it afterwards (docs/fencing.md, "The lease agent").

The fault, for real: the master pod's own network namespace drops every packet to and from the controller's pod
and the operator's pod (iptables entered with nsenter through the JVM's PID), and the kubelet of its node is
SIGSTOPped, so the operator's pod deletion cannot take effect. Clients and the slaves still reach the master:
the case in which a master without a lease goes on acknowledging with a slave's help after the controller has
elected another (its heartbeats stop). Two producers run through it: an ordinary one, and one pinned to the
master's address (`produce --pin-to`), which keeps sending to it whatever the route says.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from typing import Any

import pytest

from e2e.e2e_node import cluster_script
from e2e.test_resilience import _assert_master_followed, _wait_new_master, start_ordinary_and_pinned
from rocketmq_operator.tools.noloss import reports_no_loss_failure

pytestmark = pytest.mark.node_fault  # its master's kubelet stopped: run alone (docs/testing.md, "Stage 2")

CUT_S = 25.0
"""How long the master stays cut off: past the controller's 10 s heartbeat timeout and the election, well within
the node controller's 40 s grace (the stopped kubelet must not turn this into a lost node)."""


def _iptables(pid: int, verb: str, ip: str) -> None:
    for rule in (["INPUT", "-s", ip], ["OUTPUT", "-d", ip]):
        subprocess.run(
            ["nsenter", "-t", str(pid), "-n", "iptables", verb, *rule, "-j", "DROP"],
            check=verb == "-I",
            capture_output=True,
            text=True,
            timeout=30,
        )


def test_a_master_cut_off_from_controller_and_operator_with_its_kubelet_stopped_fences_itself(
    second_quickstart: Any,
) -> None:
    """On the quickstart with the lease agent opted in (tests/e2e/conftest.py, `second_quickstart`)."""
    group = second_quickstart
    group.wait_healthy()
    _cut_off_trial(group)


def _cut_off_trial(group: Any) -> None:
    old = group.master()
    status = group.status()
    address = (status.get("master") or {}).get("address")
    assert old is not None and address, status.get("master")
    pod = group.pods()[old]
    node_name = pod["spec"]["nodeName"]
    controllers = group.node.json("-n", group.ns, "get", "pods")["items"]
    cut_ips = [
        p["status"]["podIP"] for p in controllers if p["metadata"]["name"].startswith(f"{group.controller_group}-")
    ]
    operators = group.node.json("-n", "rocketmq-operator", "get", "pods")["items"]
    cut_ips += [p["status"]["podIP"] for p in operators if (p.get("status") or {}).get("podIP")]
    assert len(cut_ips) >= 2, cut_ips
    events_before = group.event_mark()
    through, pinned = start_ordinary_and_pinned(group, "cut", address, 6_000, 1_600)

    jvm, _ = group.jvm_pid(old)
    kubelet = cluster_script.daemon_pid(group.node.state_dir, node_name, "kubelet")
    cut_wall = time.time()
    os.kill(kubelet, signal.SIGSTOP)
    try:
        for ip in cut_ips:
            _iptables(jvm, "-I", ip)
        seconds = _wait_new_master(group, old)
        print(f"lease: {old} cut off from {cut_ips} on {node_name} (kubelet stopped) -> new master in {seconds:.1f}s")
        group.node.wait_for("the cut to have lasted", lambda: time.time() - cut_wall >= CUT_S, 120, 1)
    finally:
        for ip in cut_ips:
            _iptables(jvm, "-D", ip)
        os.kill(kubelet, signal.SIGCONT)

    log = cluster_script.pod_log(group.node.state_dir, node_name, group.ns, old, "lease-agent")
    for line in log.splitlines():  # the agent's verdicts and actions, for the record
        if (" lease " in line and ": lease Silent" not in line) or "fenced" in line:
            print(f"lease agent of {old}: {line[line.find(' F ') + 3 :]}")
    fenced = re.search(r"^(\S+) (\S+) .*lease Fence: (.*)$", log, re.MULTILINE)
    assert fenced is not None, f"the lease agent of {old} never fenced it:\n{log[-3000:]}"
    print(
        f"lease: cut at {time.strftime('%H:%M:%S', time.gmtime(cut_wall))}.{int(cut_wall % 1 * 1000):03d} UTC; the "
        f"agent's verdict: {fenced.group(3)} (logged {fenced.group(1)})"
    )

    through_report = group.tool_result(through)
    pinned_report = group.tool_result(pinned)
    new = group.master()
    assert new is not None and new != old
    _assert_master_followed(group, new, events_before)
    print(
        f"lease: ordinary producer {through_report['acknowledged']}/{through_report['sent']} acknowledged, pauses "
        f"{through_report.get('ack_gaps')}; pinned to {address}: {pinned_report['acknowledged']}/"
        f"{pinned_report['sent']} acknowledged, failures {pinned_report.get('failures')}"
    )
    consumed = group.consume_all("consume-after-cut", report_keys=True)
    assert consumed["body_mismatches"] == 0
    loss = reports_no_loss_failure([through_report, pinned_report], consumed)
    assert loss is None, loss
