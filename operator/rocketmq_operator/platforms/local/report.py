"""`local status`: observe the groups of a state directory and describe them like the operator does.

Contract:

* `collect(state, layout)` observes every BrokerGroup through `observe.observe_groups` (controller calls go to
  the DLedger peer ports, broker calls to each listenPort), builds each group's status with
  `core.status.build_broker_status`, persisting it in `status/<group>.json` so that `history` and condition
  `lastTransitionTime`s carry over from one command to the next, and returns a JSON-ready document:
  `stateDir`, `supervisor` {pid, running, phase}, `nameServers`, `controllers` (`host:port`), `processes`
  (every supervised process: name, role, group, pid, running, desired, restarts, suspended, address, log) and
  `groups`: per BrokerGroup the `BrokerGroupStatus` dumped by alias (camelCase) plus `name`, `nameServers`,
  `controllers`, and per replica the local `pid`, `restarts`, `desired`, `suspended`; `proxies`: per
  proxy process its name, its Proxy, its gRPC `endpoint`, `ready` (running, its ports answer), the `revision`
  it runs and whether it is `rolled` (runs its target); and `proxyGroups`: per Proxy its processes and the
  `rollout` of them (`platforms.local.proxy_roll`), as a BrokerGroup's.
  When nothing runs (`nothing_runs`: no supervisor, no supervised process, e.g. after `local down`) nothing
  is asked over the network and nothing is persisted: the document has `stopped: true` and each group
  `phase: Stopped`, no master, `writable: false` (`stopped_groups`).
* `render_table(doc)` is the human form, written with `core.status_view` (shared with `kubectl rocketmq
  status`): one row per broker replica (group, replica, brokerId, role, alive, inSync, maxOffset, then the local
  pid and restarts), then per group a line with needAcks/writable (`controller=unavailable` when the controller
  could not be asked: roles are then what the brokers report) and every problem condition, or `stopped`, then
  per group or Proxy with a `rollout` its phase, step or message and, while it is not complete, each replica's
  version and whether it is rolled (`rollout_lines`), the topics and consumer groups (existence unknown, `-`,
  when stopped), then the name-server/controller processes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from rocketmq_operator.api.models import BrokerGroup, BrokerGroupStatus
from rocketmq_operator.control.clock import now_iso
from rocketmq_operator.core.observation import GroupState, ReplicaObservation
from rocketmq_operator.core.status import build_broker_status
from rocketmq_operator.core.status_view import STOPPED, cell, group_lines, replica_table, table, topic_tables
from rocketmq_operator.platforms.local.group_drain import read_drain_record
from rocketmq_operator.platforms.local.group_states import observe
from rocketmq_operator.platforms.local.layout import StateLayout
from rocketmq_operator.platforms.local.placement import load_resources
from rocketmq_operator.platforms.local.ports import ports_answer
from rocketmq_operator.platforms.local.roll import with_rollout
from rocketmq_operator.platforms.local.state import LocalState, ReplicaProcess, pid_alive, write_json_atomic
from rocketmq_operator.platforms.local.topics import topics_status_path


def supervisor_running(state: LocalState) -> bool:
    return pid_alive(state.supervisor.pid, state.state_dir)


def nothing_runs(state: LocalState) -> bool:
    """No supervisor and no supervised process runs (after `local down`, or a supervisor that never started)."""
    return not supervisor_running(state) and not any(pid_alive(r.pid, r.run_config) for r in state.replicas)


def stopped_groups(state: LocalState) -> dict[str, GroupState]:
    """What there is to know of each BrokerGroup when nothing runs: no broker and no controller answers."""
    return {
        g.name: GroupState(
            group=g.name,
            observed_at=0.0,
            controller_mode=g.controller_mode,
            controller_error="nothing runs: the group is stopped",
            replicas=tuple(
                ReplicaObservation(rp.name, rp.address, reachable=False, error="not running")
                for r in g.replicas
                if (rp := state.replica(r)) is not None
            ),
        )
        for g in state.groups
        if g.kind == "BrokerGroup"
    }


def _previous(layout: StateLayout, group: str) -> BrokerGroupStatus | None:
    path = layout.status(group)
    try:
        return BrokerGroupStatus.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValidationError, ValueError):
        return None


def _with_topics(doc: dict[str, Any], layout: StateLayout, group: str, wanted: bool) -> None:
    """The supervisor's last topic assertion (`status/<group>.topics.json`): `topics`, `consumerGroups`, and
    `writable` false until the master now reported holds every declared topic and group."""
    if not wanted:
        return
    try:
        found = json.loads(topics_status_path(layout, group).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        found = None
    master = (doc.get("master") or {}).get("address")
    if not isinstance(found, dict):
        found = {"asserted": False, "master": None, "errors": ["the supervisor has not asserted topics yet"]}
    doc["topics"] = found.get("topics", [])
    doc["consumerGroups"] = found.get("consumerGroups", [])
    asserted = bool(found.get("asserted")) and master is not None and found.get("master") == master
    doc["topicsAsserted"] = asserted
    if not asserted and doc.get("writable"):
        doc["writable"] = False
        why = "; ".join(found.get("errors") or []) or f"topics last asserted on {found.get('master')}, not {master}"
        doc.setdefault("conditions", []).append(
            {"type": "TopicsAsserted", "status": "False", "reason": "NotYetAsserted", "message": why}
        )


def _topics_unknown(doc: dict[str, Any]) -> None:
    """A stopped group: the last assertion's findings are history, not facts (no broker answers to confirm a
    topic, and `down --purge` or another `up` may drop it): existence, offsets and lag become unknown (null)."""
    for t in doc.get("topics") or []:
        t.update(exists=None, maxOffsets=None)
    for g in doc.get("consumerGroups") or []:
        g.update(exists=None, lag=None, lagByTopic={})


def _process_doc(state: LocalState) -> list[dict[str, Any]]:
    return [
        {
            "name": r.name,
            "role": r.role,
            "group": r.group,
            "pid": r.pid,
            "running": pid_alive(r.pid, r.run_config),
            "desired": r.desired,
            "restarts": r.restarts,
            "suspended": r.suspended,
            "address": r.address,
            "ports": r.ports,
            "lastExitCode": r.last_exit_code,
            "log": r.log,
        }
        for r in state.replicas
    ]


async def proxy_docs(state: LocalState, stopped: bool) -> list[dict[str, Any]]:
    """Every local proxy: its gRPC endpoint and whether it is ready (running, and its gRPC and remoting ports
    answer: what the pod's readiness probe checks on Kubernetes)."""
    proxies = [r for r in state.replicas if r.role == "proxy"]

    async def ready(r: ReplicaProcess) -> bool:
        if stopped or not pid_alive(r.pid, r.run_config):
            return False
        return await ports_answer(r.ports.values())

    answers = await asyncio.gather(*(ready(r) for r in proxies))
    return [
        {
            "name": r.name,
            "proxy": r.group,
            "endpoint": r.address,
            "ready": ok,
            "revision": r.revision,
            "rolled": r.revision == (r.target_revision or r.revision),
        }
        for r, ok in zip(proxies, answers, strict=True)
    ]


def proxy_group_docs(
    state: LocalState, layout: StateLayout, proxies: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Per Proxy: its processes (name, ready, revision) and the supervisor's last `rollout` of them (the
    BrokerGroups' document, with the RolloutBlocked condition while it is blocked)."""
    docs: list[dict[str, Any]] = []
    for info in state.groups:
        if info.kind != "Proxy":
            continue
        doc: dict[str, Any] = {
            "name": info.name,
            "kind": "Proxy",
            "replicas": [
                {"name": p["name"], "ready": p["ready"], "revision": p["revision"]}
                for p in proxies
                if p["proxy"] == info.name
            ],
        }
        with_rollout(doc, layout, info.name)
        drain = read_drain_record(layout, info.name)
        if drain is not None:
            doc["drain"] = drain.model_dump(mode="json", by_alias=True)
        docs.append(doc)
    return docs


async def collect(state: LocalState, layout: StateLayout, *, persist: bool = True) -> dict[str, Any]:
    specs = {r.metadata.name: r for r in load_resources(state) if isinstance(r, BrokerGroup)}
    stopped = nothing_runs(state)
    # Stopped: no network round trip (the ports may belong to someone else by now) and no last known master.
    observed = stopped_groups(state) if stopped else await observe(state)
    now = now_iso()
    proxies = await proxy_docs(state, stopped)
    groups: list[dict[str, Any]] = []
    for info in state.groups:
        if info.kind != "BrokerGroup" or info.name not in observed or info.name not in specs:
            continue
        bg = specs[info.name]
        previous = None if stopped else _previous(layout, info.name)
        status = build_broker_status(bg.spec, observed[info.name], previous, now)
        if stopped:
            status = status.model_copy(update={"phase": STOPPED})
        elif persist:
            write_json_atomic(layout.status(info.name), status.model_dump(mode="json", by_alias=True))
        doc: dict[str, Any] = {"name": info.name, **status.model_dump(mode="json", by_alias=True)}
        _with_topics(doc, layout, info.name, wanted=True)
        if stopped:
            _topics_unknown(doc)
        with_rollout(doc, layout, info.name)
        drain = read_drain_record(layout, info.name)
        if drain is not None:
            doc["drain"] = drain.model_dump(mode="json", by_alias=True)
        doc["nameServers"] = info.name_servers
        doc["controllers"] = info.controllers
        for replica in doc["replicas"]:
            rp = state.replica(replica["name"])
            if rp is None:
                continue
            replica["pid"] = rp.pid if pid_alive(rp.pid, rp.run_config) else None
            replica["restarts"] = rp.restarts
            replica["desired"] = rp.desired
            replica["suspended"] = rp.suspended
        groups.append(doc)
    return {
        "stateDir": state.state_dir,
        "observedAt": now,
        "stopped": stopped,
        "supervisor": {
            "pid": state.supervisor.pid,
            "running": supervisor_running(state),
            "phase": state.supervisor.phase,
        },
        "nameServers": state.name_servers,
        "controllers": state.controllers,
        "processes": _process_doc(state),
        "groups": groups,
        "proxies": proxies,
        "proxyGroups": proxy_group_docs(state, layout, proxies),
    }


def _role(g: Mapping[str, Any], r: Mapping[str, Any]) -> str:
    """The local decoration of a role: a stopped group, a suspended process, a replica taken down."""
    role = str(r["role"])
    if g.get("phase") == STOPPED:
        return "stopped"
    if r.get("suspended"):
        return role + " (stopped)"
    if r.get("desired") == "stopped":
        return role + " (down)"
    return role


def _local_cells(g: Mapping[str, Any], r: Mapping[str, Any]) -> list[str]:
    del g
    return [cell(r.get("pid")), cell(r.get("restarts"))]


def rollout_lines(groups: Sequence[Mapping[str, Any]]) -> list[str]:
    """Per group with a rollout in its status (one that ran: a roll in progress, blocked or finished): a line with
    the phase and what it does (or why it stopped), then, unless it is complete, one row per replica: the version
    it reports and whether it runs the target revision."""
    lines: list[str] = []
    for g in groups:
        rollout = g.get("rollout") or {}
        phase = str(rollout.get("phase") or "")
        if not rollout or (phase == "Complete" and not rollout.get("started")):
            continue  # no roll ever ran: the supervisor only noted the revision
        detail = rollout.get("currentStep") if phase == "Rolling" else rollout.get("message")
        reason = f" ({rollout['reason']})" if rollout.get("reason") else ""
        text = f"{g['name']}: rollout {phase}{reason}"
        text += f": {detail}" if detail else ""
        text += f"; {rollout.get('restarts', 0)} restart(s), {rollout.get('switchovers', 0)} switchover(s)"
        lines.append(text)
        if phase == "Complete":
            continue  # one line of history: every replica is rolled, the replica table already lists them
        done = set(rollout.get("replicasDone") or [])
        rows = [["GROUP", "REPLICA", "VERSION", "ROLLED"]]
        rows.extend(
            [str(g["name"]), str(r["name"]), cell(r.get("version")), cell(r["name"] in done)]
            for r in g.get("replicas") or []
        )
        if len(rows) > 1:
            lines.extend(table(rows))
    return lines


def render_table(doc: dict[str, Any]) -> str:
    lines: list[str] = []
    sup = doc["supervisor"]
    lines.append(
        f"state {doc['stateDir']}  supervisor "
        + (f"pid {sup['pid']} ({sup['phase']})" if sup["running"] else "not running")
    )
    name_servers = ";".join(doc["nameServers"]) or "-"
    lines.append(f"nameServers {name_servers}  controllers {';'.join(doc['controllers']) or '-'}")
    groups = doc["groups"]
    lines.extend(replica_table(groups, extra_headers=("PID", "RESTARTS"), extra_cells=_local_cells, role_text=_role))
    lines.extend(group_lines(groups))
    lines.extend(rollout_lines([*groups, *doc.get("proxyGroups", [])]))
    lines.extend(topic_tables(groups))
    procs = [p for p in doc["processes"] if p["role"] != "broker"]
    if procs:
        rows = [["PROCESS", "ROLE", "ADDRESS", "RUNNING", "PID", "RESTARTS"]]
        for p in procs:
            address = ";".join(f"{k} 127.0.0.1:{v}" for k, v in p["ports"].items())
            running = "stopped" if p["suspended"] else cell(p["running"])
            rows.append([p["name"], p["role"], address, running, cell(p["pid"]), cell(p["restarts"])])
        lines.extend(table(rows))
    return "\n".join(lines)


def dumps(doc: dict[str, Any], *, compact: bool = False) -> str:
    if compact:
        return json.dumps(doc, separators=(",", ":"))
    return json.dumps(doc, indent=2)
