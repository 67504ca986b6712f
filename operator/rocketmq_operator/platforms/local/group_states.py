"""The local platform's observation: one `GroupState` per BrokerGroup of a state directory, through
`control.observe.observe_groups` (controller calls to the DLedger peer ports, broker calls to each
listenPort). Used by the supervisor's pass (runtime) and by `local status` (a user's command): neither imports
the other for it.
"""

from __future__ import annotations

from collections.abc import Sequence

from rocketmq_operator.control.observe import OBSERVE_TIMEOUT_S, observe_groups
from rocketmq_operator.core.observation import GroupState, ReplicaEndpoint
from rocketmq_operator.platforms.local.auth import state_client
from rocketmq_operator.platforms.local.state import LocalState
from rocketmq_operator.remoting import RemotingClient


async def observe(
    state: LocalState, client: RemotingClient | None = None, *, timeout: float = OBSERVE_TIMEOUT_S
) -> dict[str, GroupState]:
    """One GroupState per BrokerGroup; groups sharing a ControllerGroup share one controller round trip.
    Uses ``client`` when given (kept open by the caller), else a client of its own."""
    if client is None:
        async with state_client(state, request_timeout=2.0) as own:
            return await observe(state, own, timeout=timeout)
    brokers = [g for g in state.groups if g.kind == "BrokerGroup"]
    by_controllers: dict[tuple[str, ...], list[str]] = {}
    for g in brokers:
        by_controllers.setdefault(tuple(g.controllers), []).append(g.name)
    out: dict[str, GroupState] = {}
    for controllers, names in by_controllers.items():
        endpoints: dict[str, Sequence[ReplicaEndpoint]] = {}
        modes: dict[str, bool] = {}
        for name in names:
            info = state.group(name)
            assert info is not None
            endpoints[name] = [
                ReplicaEndpoint(r, rp.address) for r in info.replicas if (rp := state.replica(r)) is not None
            ]
            modes[name] = info.controller_mode
        out.update(await observe_groups(client, list(controllers), endpoints, controller_mode=modes, timeout=timeout))
    return out
