"""`rocketmq-operator switchover GROUP --to REPLICA|BROKER_ID` on the local platform.

The target is a replica name (`broker-a-2`, as `local status` lists them) or the broker id the controller
assigned it. Reads the group's endpoints from the state directory and runs `control.switchover.switchover` (the same
fence → catch-up → designated election → unfence sequence the Kubernetes platform uses). A refusal (target not
alive or not in the SyncStateSet, controller unreadable, …) exits 2 with the reason and what to do; a cluster that
is stopped or was never started exits 3 with the `local up` that starts it (`control.not_running`), before any
controller is asked.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from rocketmq_operator.api.models import BrokerGroup
from rocketmq_operator.control.observe import observe_group
from rocketmq_operator.control.switchover import OperationRefused, OperationReport, switchover_group
from rocketmq_operator.core.failover import SwitchoverTargetError, switchover_target_id
from rocketmq_operator.core.observation import ReplicaEndpoint
from rocketmq_operator.platforms.local.auth import state_client
from rocketmq_operator.platforms.local.layout import StateLayout
from rocketmq_operator.platforms.local.lifecycle import NotRunning, not_running, read_existing
from rocketmq_operator.platforms.local.placement import load_resources
from rocketmq_operator.platforms.local.report import nothing_runs
from rocketmq_operator.platforms.local.state import LocalState, StateError

EXIT_OK, EXIT_REFUSED, EXIT_STOPPED = 0, 2, 3


def group_endpoints(state: LocalState, group: str) -> tuple[str, list[str], list[ReplicaEndpoint], BrokerGroup]:
    """(clusterName, controller addresses, replica endpoints, manifest) of a BrokerGroup in a state directory."""
    info = state.group(group)
    names = [g.name for g in state.groups if g.kind == "BrokerGroup"]
    if info is None or info.kind != "BrokerGroup":
        raise OperationRefused(f"{group!r} is not a BrokerGroup of this local cluster; groups: {', '.join(names)}")
    if not info.controller_mode:
        raise OperationRefused(f"{group}: switchover needs haMode controller (elections by the RocketMQ controller)")
    bg = next(r for r in load_resources(state) if isinstance(r, BrokerGroup) and r.metadata.name == group)
    endpoints = [ReplicaEndpoint(r, rp.address) for r in info.replicas if (rp := state.replica(r)) is not None]
    return bg.spec.cluster_name, list(info.controllers), endpoints, bg


async def run_switchover(state: LocalState, group: str, target: str) -> OperationReport:
    _, controllers, endpoints, bg = group_endpoints(state, group)
    async with state_client(state) as client:
        ids: dict[str, int | None] = {e.name: None for e in endpoints}
        if not target.strip().isdigit():  # a replica name: its controller-assigned id, observed now
            observed = await observe_group(client, controllers, group, endpoints)
            ids.update({r.name: r.broker_id for r in observed.replicas})
        try:
            target_id = switchover_target_id(target, ids, shown_by="`rocketmq-operator local status`")
        except SwitchoverTargetError as exc:
            raise OperationRefused(str(exc)) from None
        return await switchover_group(client, bg, controllers, endpoints, target_id)


def cmd_switchover(state_dir: Path, group: str, target: str, as_json: bool) -> int:
    layout = StateLayout(state_dir)
    try:
        state = read_existing(layout)
        if nothing_runs(state):  # else the controller's silence reads as "no broker id yet" or unavailable
            raise not_running(layout, state)
        report = asyncio.run(run_switchover(state, group, target))
    except NotRunning as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_STOPPED
    except StateError as exc:
        print(f"error: no local cluster at {layout.root} ({exc}); fix: `rocketmq-operator local up -f FILE`")
        return EXIT_REFUSED
    except OperationRefused as exc:
        print(f"error: {exc}")
        return EXIT_REFUSED
    doc = {
        "group": group,
        "newMaster": report.new_master,
        "epoch": report.epoch,
        "writePauseSeconds": None if report.write_pause_s is None else round(report.write_pause_s, 3),
        "steps": report.steps,
    }
    if as_json:
        print(json.dumps(doc, indent=2))
    else:
        for step in report.steps:
            print(f"  {step}")
        pause = doc["writePauseSeconds"]
        print(f"{group}: master is now broker {report.new_master} (epoch {report.epoch}); write pause {pause}s")
    return EXIT_OK
