"""The lease agent: one broker's lease (`core.lease`), run next to it, every round: read, decide, act.

Contract:

* `LeaseAgent(client, broker_address)` watches the broker at ``broker_address`` (loopback in a pod). It learns
  everything else from the broker's own live config: its group (`brokerName`), its controllers (`controllerAddr`),
  the address the controller lists it under (`brokerIP1:listenPort`) and the controllers' heartbeat timeout
  (`controllerHeartBeatTimeoutMills`, which sizes the lease).
* `await agent.round()` does one round and returns its `LeaseDecision`; it never raises for a broker, peer or
  controller that does not answer (that is a fact of the round). `run(stop)` repeats it every
  `LeaseBounds.period_s` until ``stop`` is set, and logs each change of verdict once, with its reason.
* Acts: a **fence** (`core.lease`: deposed, or cut off from controllers that others reach) puts
  `control.fence.fence_config` and `DROP_SLAVES` (its HA server drops its slaves) on the broker with a lease of
  `AGENT_FENCE_LEASE_S`, extended every round while it must hold, and never shortens a fence that lasts longer (a
  user's, a switchover's). A fence it set because its lease lapsed it gives back itself once a controller leader
  confirms the broker at the epoch it held (`core.lease.may_give_back`, with the values it replaced); any other
  fence of its own lapses once it stops extending it, and the replication policy gives it back
  (`core.failover.plan_abandoned_fences`), on either platform. A **slave** whose round reached a controller leader
  publishes that wall time in its broker's send door (`core.lease`, "Publishing"), at most every 2 s,
  unless the door holds a fence.
* The state between rounds (the last confirmation, the SyncStateSet and addresses it confirmed) is the agent's
  memory only: a restarted agent starts with no lease, which is the safe side (a master it restarts next to is
  fenced unless a controller leader confirms it first).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from rocketmq_operator.control.fence import (
    DEFAULT_HA_HOUSEKEEPING_MS,
    DROP_SLAVES,
    FENCE_DOOR_KEY,
    door_shut_until_ms,
    fence_config,
    is_fenced,
)
from rocketmq_operator.control.observe import replica_ids
from rocketmq_operator.core.lease import (
    AGENT_FENCE_LEASE_S,
    ControllerView,
    LeaseBounds,
    LeaseDecision,
    LeaseFacts,
    LeaseVerdict,
    PeerFacts,
    decide_lease,
    may_give_back,
    may_publish,
    published_confirmation,
)
from rocketmq_operator.remoting import RemotingClient, RemotingException

log = logging.getLogger("rocketmq_operator.lease_agent")
DROP_SLAVES_KEY = next(iter(DROP_SLAVES))
RESTORED = ("brokerPermission", "minInSyncReplicas", "haSendHeartbeatInterval")
"""The keys of `fence_config` whose values before the agent's fence it gives back (the door and the HA housekeeping
go back to RocketMQ's defaults, which the project never renders)."""


def fence_values(until: str, decision: LeaseDecision) -> dict[str, str]:
    """The agent's fence: `fence_config` with a lease until ``until`` (ms), and `DROP_SLAVES` when deposed."""
    return {**fence_config(int(until)), **(DROP_SLAVES if decision.drop_slaves else {})}


@dataclass
class LeaseMemory:
    """What one round leaves for the next."""

    confirmed_at_s: float | None = None
    confirmed_wall_s: float | None = None
    peers: dict[int, str] = field(default_factory=dict)  # the electable peers last confirmed: id -> address
    verdict: LeaseVerdict | None = None
    confirmed_epoch: int | None = None  # the master epoch of the last confirmation
    fenced_at_epoch: int | None = None  # set when the agent fences on a lapsed lease: the epoch it held then
    before_fence: dict[str, str] = field(default_factory=dict)  # what that fence replaced, to give back
    fence_door: str | None = None  # the send door that fence set (last extended): its own, not a later one
    controllers_restarted: bool = False  # every controller was gone at some round since the last confirmation
    leader: str | None = None  # the controller leader last found (asked directly; looked up again if it fails)
    published_wall_s: float | None = None  # the last confirmation a slave published (each update is a disk write)
    bounds: LeaseBounds = field(default_factory=lambda: LeaseBounds.for_heartbeat_timeout(None))


def controller_addresses(config: Mapping[str, str]) -> list[str]:
    """The broker's `controllerAddr` (``host:port;host:port``) as a list."""
    return [a.strip() for a in config.get("controllerAddr", "").split(";") if a.strip()]


class LeaseAgent:
    def __init__(
        self,
        client: RemotingClient,
        broker_address: str,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        name: str | None = None,
    ) -> None:
        self.client = client
        self.broker_address = broker_address
        self.memory = LeaseMemory()
        self.monotonic = monotonic
        self.wall = wall
        self.name = name or broker_address

    @property
    def timeout(self) -> float:
        return self.memory.bounds.call_timeout_s

    async def round(self) -> LeaseDecision:
        started, wall = self.monotonic(), self.wall()
        config = await self._config(self.broker_address)
        if config is None:
            return self._note(LeaseDecision(LeaseVerdict.SILENT, "the broker does not answer"))
        heartbeat = config.get("controllerHeartBeatTimeoutMills", "")
        self.memory.bounds = LeaseBounds.for_heartbeat_timeout(int(heartbeat) if heartbeat.isdigit() else None)
        is_master = await self._is_master(self.broker_address)
        try:  # the lookup and the query together within one call's timeout
            view, broker_id, addresses = await asyncio.wait_for(self._controller(config), self.timeout)
        except TimeoutError:
            view, broker_id, addresses = None, None, {}
        if is_master and view is None and await self._controllers_gone(config):  # only a master's lease needs it
            # Every controller restarted since the last confirmation (a restart refuses connections first, then
            # listens before it has a leader): whatever leads next holds no stale heartbeats of this master.
            self.memory.controllers_restarted = True
        gone = view is None and self.memory.controllers_restarted
        peers: dict[int, PeerFacts] = {}
        if is_master and view is None:
            peers = await self._peers(wall)
        facts = LeaseFacts(
            now_s=self.monotonic(),  # the lease's age when deciding: a slow round is not a young lease
            wall_s=wall,
            is_master=is_master,
            broker_id=broker_id,
            controller=view,
            controllers_gone=gone,
            confirmed_at_s=self.memory.confirmed_at_s,
            confirmed_wall_s=self.memory.confirmed_wall_s,
            peers=peers,
        )
        decision = decide_lease(facts, self.memory.bounds)
        if decision.verdict is LeaseVerdict.CONFIRMED and view is not None:
            self.memory.confirmed_at_s, self.memory.confirmed_wall_s = started, wall
            self.memory.controllers_restarted = False
            self.memory.confirmed_epoch = view.master_epoch
            await self._give_back(config, view.master_epoch)
            self.memory.peers = {i: a for i, a in addresses.items() if i in view.sync_state_set and i != broker_id}
        elif decision.verdict is LeaseVerdict.SLAVE and view is not None:
            await self._publish(config, wall)
        elif decision.fence:
            await self._fence(config, wall, decision)
        return self._note(decision)

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            started = self.monotonic()
            try:
                await self.round()
            except Exception:  # a round must never end the agent; the next one reads everything again
                log.exception("%s: lease round failed", self.name)
            rest = max(0.0, self.memory.bounds.period_s - (self.monotonic() - started))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), rest)

    def _note(self, decision: LeaseDecision) -> LeaseDecision:
        if decision.verdict is not self.memory.verdict:
            level = logging.WARNING if decision.verdict in (LeaseVerdict.FENCE, LeaseVerdict.FAILSAFE) else logging.INFO
            log.log(level, "%s: lease %s: %s", self.name, decision.verdict.value, decision.reason)
            self.memory.verdict = decision.verdict
        return decision

    async def _publish(self, config: dict[str, str], wall: float) -> None:
        """Every `publish_interval_s` at most: RocketMQ writes its config file on every update."""
        last = self.memory.published_wall_s
        if last is not None and wall - last < self.memory.bounds.publish_interval_s - self.memory.bounds.period_s / 2:
            return
        if may_publish(config, FENCE_DOOR_KEY, wall) and await self._update(
            self.broker_address, {FENCE_DOOR_KEY: str(int(wall * 1000))}
        ):
            self.memory.published_wall_s = wall

    async def _give_back(self, config: dict[str, str], epoch: int) -> None:
        memory = self.memory
        # Its own fence by the door it set, not by `is_fenced`: the operator's hot-key pass may have rewritten
        # `minInSyncReplicas` meanwhile, and a fence nobody recognises is never given back.
        own = memory.fence_door is not None and config.get(FENCE_DOOR_KEY) == memory.fence_door
        if not may_give_back(own_lease_fence=own and bool(memory.before_fence), fenced_at_epoch=memory.fenced_at_epoch,
                             confirmed_epoch=epoch):  # fmt: skip
            return
        values = {**memory.before_fence, FENCE_DOOR_KEY: "0", DROP_SLAVES_KEY: DEFAULT_HA_HOUSEKEEPING_MS}
        if await self._update(self.broker_address, values):
            log.warning("%s: unfenced: a controller leader confirms it master again at epoch %d", self.name, epoch)
            memory.fenced_at_epoch, memory.before_fence, memory.fence_door = None, {}, None

    async def _fence(self, config: dict[str, str], wall: float, decision: LeaseDecision) -> None:
        fenced = is_fenced(config)
        if decision.drop_slaves and fenced and config.get(DROP_SLAVES_KEY) != DROP_SLAVES[DROP_SLAVES_KEY]:
            await self._update(self.broker_address, dict(DROP_SLAVES))
        door = config.get(FENCE_DOOR_KEY, "0")
        if fenced and door_shut_until_ms(config) >= (wall + AGENT_FENCE_LEASE_S / 2) * 1000:
            return  # fenced, and for long enough (the agent's own, or a longer one it must not shorten)
        until = str(int((wall + AGENT_FENCE_LEASE_S) * 1000))
        if fenced:
            # Only the door is extended: a write of `brokerPermission` makes RocketMQ register the broker with every
            # name server again, and a deposed master registering as its group's master (read-only) takes the route
            # from the new master until the operator gives it back (22 s of NO_ROUTE on the real node).
            if await self._update(self.broker_address, {FENCE_DOOR_KEY: until}) and door == self.memory.fence_door:
                self.memory.fence_door = until
        else:
            values = fence_values(until, decision)
            if not (await self._update(self.broker_address, values) or await self._took(values)):
                return
            log.warning("%s: fenced (%s)", self.name, decision.reason)
            self.memory.fence_door = until
            if decision.lapsed:  # given back once confirmed again at this epoch; a deposed broker's never
                self.memory.fenced_at_epoch = self.memory.confirmed_epoch
                self.memory.before_fence = {k: config[k] for k in RESTORED if k in config}

    async def _took(self, values: dict[str, str]) -> bool:
        """Whether the broker has ``values`` now, after a write whose answer did not come: RocketMQ applies a config
        change first, then, for `brokerPermission`, registers the broker with every name server before it answers
        (`AdminBrokerProcessor.updateBrokerConfig`), which a master cut off from its name servers does only after
        the registration's own timeout. The fence took at once; without this the agent neither said so nor kept
        what it must give back."""
        config = await self._config(self.broker_address)
        return config is not None and all(config.get(k) == v for k, v in values.items())

    async def _config(self, address: str) -> dict[str, str] | None:
        try:
            return await self.client.get_broker_config(address, timeout=self.timeout)
        except (RemotingException, OSError):
            return None

    async def _is_master(self, address: str) -> bool | None:
        try:
            return (await self.client.get_ha_status(address, timeout=self.timeout)).master
        except (RemotingException, OSError):
            # A broker with no role yet answers its config but not this: it serves no write.
            return False if address == self.broker_address else None

    async def _update(self, address: str, values: dict[str, str]) -> bool:
        try:
            await self.client.update_broker_config(address, values, timeout=self.timeout)
        except (RemotingException, OSError) as exc:
            log.warning("%s: could not update %s (%s), tried again next round", self.name, address, exc)
            return False
        return True

    async def _controllers_gone(self, config: dict[str, str]) -> bool:
        """Every controller address refuses a TCP connection or does not resolve (its process or pod is gone), as
        opposed to timing out (paused, or cut off: it may return with a stale heartbeat table)."""
        addresses = controller_addresses(config)

        async def gone(address: str) -> bool:
            host, _, port = address.rpartition(":")
            try:
                _, writer = await asyncio.wait_for(asyncio.open_connection(host, int(port)), self.timeout)
            except (ConnectionRefusedError, socket.gaierror):
                return True
            except (OSError, TimeoutError, ValueError):
                return False
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
            return False

        return bool(addresses) and all(await asyncio.gather(*(gone(a) for a in addresses)))

    async def _controller(self, config: dict[str, str]) -> tuple[ControllerView | None, int | None, dict[int, str]]:
        controllers = controller_addresses(config)
        name = config.get("brokerName", "")
        own = f"{config.get('brokerIP1', '')}:{config.get('listenPort', '')}"
        if not controllers or not name:
            return None, None, {}
        info = None
        if self.memory.leader is not None:
            with contextlib.suppress(RemotingException, OSError):  # moved or gone: looked up again below
                info = (await self.client.get_sync_state_data(self.memory.leader, [name], timeout=self.timeout)).get(
                    name
                )
        if info is None:
            self.memory.leader = None
            try:
                found = await self.client.find_controller_leader(controllers, timeout=self.timeout)
                if not found.leader_address:
                    return None, None, {}
                info = (await self.client.get_sync_state_data(found.leader_address, [name], timeout=self.timeout)).get(
                    name
                )
            except (RemotingException, OSError):  # NoControllerLeader included
                return None, None, {}
            self.memory.leader = found.leader_address
        if info is None:
            return None, None, {}
        replicas = (*info.in_sync_replicas, *info.not_in_sync_replicas)
        addresses = {r.broker_id: r.broker_address for r in replicas}
        broker_id = replica_ids(info).get(own, (None, None))[0]  # one id per address, as the operator's observer
        return ControllerView(info.master_broker_id, info.master_epoch, info.sync_state_set), broker_id, addresses

    async def _peers(self, wall: float) -> dict[int, PeerFacts]:
        async def one(address: str) -> PeerFacts:
            config, is_master = await asyncio.gather(self._config(address), self._is_master(address))
            if config is None:
                return PeerFacts(is_master=None, confirmed_wall_s=None)
            read_at = self.wall()  # after the call: a peer may have published since this round started
            return PeerFacts(
                is_master=is_master, confirmed_wall_s=published_confirmation(config, FENCE_DOOR_KEY, read_at)
            )

        ids = sorted(self.memory.peers)
        facts = await asyncio.gather(*(one(self.memory.peers[i]) for i in ids))
        return dict(zip(ids, facts, strict=True))
