"""Fence and unfence a broker that answers: the hot keys of a fence, and the user's fences kept on each observation.

Contract: `core.fence` decides the user's fences (pure: `plan_fences`); `run_fences` only carries the plan out with
the remoting client: it keeps the replicas a user fenced fenced with the same `fence_config`, unfences them when
asked, and never raises for a broker that does not answer (a problem of its outcome, tried again next pass). The
fences `core.failover` decides are set by the switchover (`control.switchover`: `switchover_fence_config`, a fence
with a lease) and given back by it and by the replication policy (`control.policy`: `unfence_config`), which read
them with `is_fenced` and `fence_lease_expired`.
Fencing a master that answers (`fence_config`) = raising its `minInSyncReplicas` above any SyncStateSet size,
so that the broker refuses every put that waits for replication (IN_SYNC_REPLICAS_NOT_ENOUGH, not stored;
`CommitLog.asyncPutMessage`, checked on every put in controller mode), and turning its write permission off
(`brokerPermission=4`), so that clients route away at their next route refresh. The permission alone is no
fence: RocketMQ checks it on a send only for ordered topics (`AbstractSendMessageProcessor.msgCheck`), and a
client with a cached route (the Java client refreshes every 30 s) keeps being acknowledged. Fencing a master that
does not answer, or a deposed one, is the platform's (`control.policy.FailoverPlatform.fence`).
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from rocketmq_operator.core.fence import FenceFacts, plan_fences
from rocketmq_operator.core.observation import GroupState
from rocketmq_operator.remoting import RemotingClient, RemotingException
from rocketmq_operator.render.config import CONTROLLER_MODE_TIMINGS

PERM_READ = 4
PERM_READ_WRITE = 6
FENCED_MIN_IN_SYNC_REPLICAS = 1024
"""Above any SyncStateSet a group can have: a master with this `minInSyncReplicas` stores no put that waits for
replication (a put with waitStoreMsgOK=false skips the check, and is never acknowledged as replicated anyway)."""
FENCED_HEARTBEAT_MS = 3_600_000
"""`haSendHeartbeatInterval` of a fenced master: it sends its slaves nothing more. The target's HA client is shut
down when it is promoted; a frame it reads after that (RocketMQ 5.5 `AutoSwitchHAClient`: "State not matched",
then `closeMasterAndWait`) holds the promotion for 5 s, which an idle master's heartbeat every ~100 ms made
happen in about one switchover in ten (docs/benchmarks.md, Switchover)."""
DEFAULT_HEARTBEAT_MS = CONTROLLER_MODE_TIMINGS["haSendHeartbeatInterval"]
DROP_SLAVES: Mapping[str, str] = {"haHousekeepingInterval": "1"}
"""Added to the lease agent's fence (deposed, or cut off): the master's HA server drops every slave connection that
read nothing within 1 ms (`AutoSwitchHAConnection.ReadSocketService` reads the key on every loop), i.e. at once. A
live deposed master otherwise keeps a slave that a name server's stale route sent back to it (RocketMQ takes a
slave's HA address from its registration result) replicating from it, out of the new master's SyncStateSet, until
the operator restarts that slave: 14 s without a writable master on the real node. Not in the switchover's fence,
whose target must catch up from the fenced master."""
DEFAULT_HA_HOUSEKEEPING_MS = "20000"
"""RocketMQ's `haHousekeepingInterval`, which the project never renders: what an unfence gives back."""


FENCE_DOOR_KEY = "startAcceptSendRequestTimeStamp"
"""A hot BrokerConfig key: `SendMessageProcessor.preSend` refuses every send while the broker's clock is before it."""
FENCE_FOREVER_MS = 4_102_444_800_000
"""`startAcceptSendRequestTimeStamp` of a user's fence (2100-01-01): it has no lease."""
FENCE_LEASE_S = 60.0
"""How long a switchover's fence keeps the send door shut: longer than a switchover may take (catch-up 10 s,
election, 20 s for each role change). A switchover that dies midway leaves a fence whose lease lapses, and the
replication policy gives it back (`core.failover.plan_abandoned_fences`)."""


def fence_config(lease_until_ms: int | None = None) -> dict[str, str]:
    """The hot broker keys that fence a master which still answers (see the module doc).
    ``lease_until_ms``: a switchover's fence lapses then (wall clock, ms); a user's fence (None) never does."""
    return {
        "brokerPermission": str(PERM_READ),
        "minInSyncReplicas": str(FENCED_MIN_IN_SYNC_REPLICAS),
        "haSendHeartbeatInterval": str(FENCED_HEARTBEAT_MS),
        # Refuses every send at the door (SendMessageProcessor.preSend, before anything reads the broker's role):
        # a put that passed the role check as master and reaches the commit log after the demotion skips the
        # replication check and wait (CommitLog.needHandleHA reads the role again) and is answered PUT_OK from
        # the deposed master alone (docs/fencing.md). The store's minInSyncReplicas refusal cannot stop that one.
        FENCE_DOOR_KEY: str(FENCE_FOREVER_MS if lease_until_ms is None else lease_until_ms),
    }


def switchover_fence_config(now_s: float | None = None) -> dict[str, str]:
    """A switchover's fence: `fence_config` with a lease of `FENCE_LEASE_S` from ``now_s``."""
    now = time.time() if now_s is None else now_s
    return fence_config(int((now + FENCE_LEASE_S) * 1000))


def unfence_config(min_in_sync_replicas: int, heartbeat_ms: str | None) -> dict[str, str]:
    """The values a fence replaced: write permission, the group's `minInSyncReplicas`, the heartbeat the broker
    ran with before (read before the fence; the rendered default when unknown or itself a fence's), the send
    door open and the HA housekeeping of `DROP_SLAVES` back (RocketMQ's defaults, which the project never renders
    otherwise)."""
    if heartbeat_ms is None or heartbeat_ms == str(FENCED_HEARTBEAT_MS):
        heartbeat_ms = DEFAULT_HEARTBEAT_MS
    return {
        "brokerPermission": str(PERM_READ_WRITE),
        "minInSyncReplicas": str(min_in_sync_replicas),
        "haSendHeartbeatInterval": heartbeat_ms,
        FENCE_DOOR_KEY: "0",
        "haHousekeepingInterval": DEFAULT_HA_HOUSEKEEPING_MS,
    }


def is_fenced(config: Mapping[str, str]) -> bool:
    """The broker's live config carries the fence (`fence_config`): write permission off, no put stored, the send
    door shut (a fence set before the door key existed is not whole: fenced again)."""
    return (
        config.get("brokerPermission") == str(PERM_READ)
        and config.get("minInSyncReplicas") == str(FENCED_MIN_IN_SYNC_REPLICAS)
        and door_shut_until_ms(config) > 0
    )


def fence_lease_expired(config: Mapping[str, str], now_s: float | None = None) -> bool:
    """A fenced broker whose fence has a lease (a switchover's) that has passed. A user's fence never expires."""
    until = door_shut_until_ms(config)
    now_ms = (time.time() if now_s is None else now_s) * 1000
    return is_fenced(config) and until < FENCE_FOREVER_MS and until <= now_ms


def door_shut_until_ms(config: Mapping[str, str]) -> int:
    """The wall time (ms) the broker's send door is shut until (0: open, or no value)."""
    value = config.get(FENCE_DOOR_KEY, "0")
    return int(value) if value.lstrip("-").isdigit() else 0


def hot_changes_past_fence(
    wanted: Mapping[str, str], live: Mapping[str, str], *, user_fenced: bool, now_ms: int
) -> dict[str, str]:
    """The hot keys to write to a broker: each wanted value its live config does not have, except the keys of a
    fence that holds it: the user's (``user_fenced``), or any whose send door is still shut at ``now_ms`` (wall
    clock): a switchover's lease or a lease agent's fence, which only the fence's owner gives back. Writing the
    group's `minInSyncReplicas` under the lease agent's fence half undid it in a whole `make test`
    (2026-11-28): the door stayed shut, and neither the agent nor the policy recognised the rest."""
    held = user_fenced or door_shut_until_ms(live) > now_ms
    skip = set(fence_config()) | set(DROP_SLAVES) if held else set()
    return {k: v for k, v in wanted.items() if k not in skip and live.get(k) != v}


@dataclass
class FenceOutcome:
    """What a fence pass did: the replicas fenced now (status.fenced), each step done, and each problem."""

    fenced: list[str] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


async def run_fences(
    client: RemotingClient,
    state: GroupState,
    wanted: Collection[str],
    recorded: Collection[str],
    known: Collection[str],
    *,
    min_in_sync_replicas: int,
    annotation: str = "rocketmq-operator.dev/fence",
    timeout: float = 3.0,
) -> FenceOutcome:
    """The user's fences (`core.fence.plan_fences`) on one observation: read the live config of every replica
    wanted or recorded, fence or unfence what the plan says (the switchover's `fence_config`; the unfence gives back
    write permission, the group's ``min_in_sync_replicas`` and the default heartbeat, which the hot-key pass then
    brings to the rendered value). A broker that does not answer is a problem of the outcome, never raised."""
    observed: dict[str, FenceFacts] = {}
    for replica in state.replicas:
        if replica.name not in wanted and replica.name not in recorded:
            continue
        if not replica.reachable:
            observed[replica.name] = FenceFacts(reachable=False)
            continue
        try:
            config = await client.get_broker_config(replica.address, timeout=timeout)
        except (RemotingException, OSError):
            observed[replica.name] = FenceFacts(reachable=False)
            continue
        # A switchover's fence (a lease) is not the user's: it lapses and the policy gives it back.
        user_fence = is_fenced(config) and door_shut_until_ms(config) >= FENCE_FOREVER_MS
        observed[replica.name] = FenceFacts(reachable=True, fenced=user_fence)
    plan = plan_fences(wanted, recorded, known, observed, annotation=annotation)
    outcome = FenceOutcome(fenced=list(plan.fenced), problems=list(plan.problems))
    addresses = {r.name: r.address for r in state.replicas}
    for name, values, verb in [
        *((n, fence_config(), "fenced") for n in plan.fence),
        *((n, unfence_config(min_in_sync_replicas, None), "unfenced") for n in plan.unfence),
    ]:
        try:
            await client.update_broker_config(addresses[name], values, timeout=timeout)
        except (RemotingException, OSError) as exc:
            outcome.problems.append(f"{name} could not be {verb}, tried again next pass: {exc or type(exc).__name__}")
            if verb == "fenced":
                outcome.fenced.remove(name)
            else:
                outcome.fenced = sorted({*outcome.fenced, name})
            continue
        outcome.steps.append(f"{verb} {name} ({show(values)})")
    return outcome


def show(config: dict[str, str]) -> str:
    """A fence's (or an unfence's) keys as ``key=value, ...``, for the steps and messages that name them."""
    return ", ".join(f"{k}={v}" for k, v in config.items())
