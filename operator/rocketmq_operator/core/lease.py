"""A master's lease, held next to the broker (its pod, or the local supervisor): when must the broker fence itself.
Pure: plain facts of one round in, one decision out.

Why: RocketMQ's master keeps its role until told otherwise (docs/fencing.md, "What is missing upstream"). If it
cannot reach the controllers while its slaves and clients can still reach it, the controller elects another
master after `controllerHeartBeatTimeoutMills` without its heartbeats, and until the old master's slave follows
the new one the old master keeps acknowledging writes that the new master's log does not have. The operator
fences such a master by deleting its pod, which needs the API server and the master's kubelet: a partitioned node
gives neither. The lease agent runs where the broker runs and fences it over loopback.

The rules (`decide_lease`), each round (every `LeaseBounds.period_s`):

* a broker that does not answer, or answers as a slave, holds no lease: nothing to do;
* the controller leader names this broker master: **confirmed** (the caller renews the lease from the round's
  start);
* the controller leader names another broker master, or none: **deposed**: fence now (an election happened, and
  this broker missed it);
* no controller leader answered: the lease runs on from the last confirmation. Before it lapses (`lease_s`) the
  master keeps serving; after it, the master is fenced, **unless every electable peer (the other members of the
  SyncStateSet the controller last confirmed) answers as a slave and none has reached a controller leader since
  this master last did** (each agent publishes the wall time of its last confirmation in its own broker, below).
  That is an outage of the controllers for the whole group, in which no one can be elected: the master keeps
  serving (RocketMQ's own behaviour without controllers), instead of turning a controller outage into a write
  outage. A peer that reached a controller leader after this master lost it means the controllers are alive and
  it is this master that is cut off: fenced. The failsafe ends 4 s before the heartbeat timeout: controllers that
  were paused or cut off from every broker return holding the master's heartbeats as stale and elect another
  replica at once, before its next heartbeat arrives (seen in the chaos campaign: all controllers suspended 12 s,
  an election within 0.4 s of their resumption and one acknowledgement from the old master lost). Unless every
  controller has been gone at some round since the last confirmation (refused connections, or its name did not
  resolve): they restart, and a restarted controller holds an empty heartbeat table even while it elects a leader.

"Since this master last did", with clocks that may differ by `clock_skew_s` and rounds that take up to a period:
a peer's publication counts when it is later than the master's last confirmation plus two periods and the skew
(an outage that began right after the master's last round cannot be followed by a later publication). A peer
that still reaches the controllers publishes at least every `publish_interval_s` plus a period, so at the lapse
its newest publication is later than that bound whenever `lease_s` exceeds the interval, three periods and twice
the skew (`LeaseBounds.failsafe`); with a shorter lease there is no failsafe: the master is always fenced.

A fence the agent set because its lease lapsed is given back by the agent itself as soon as a controller leader
confirms the broker again at the same epoch (`may_give_back`): a controller leader's election that outlasted the
lease costs writes only until the new leader answers, not until the fence's door lapses.

The ordering (docs/fencing.md, "The lease agent"): the controller elects only after a master's heartbeats have
been missing for `controllerHeartBeatTimeoutMills` (T). The lease is T/2 - 1 s, checked every 0.5 s with calls of at
most 1 s, so a master cut off from the controllers is fenced well before any election, and in the failsafe at
most T - 4 s plus a round after its last confirmation; it cannot acknowledge once another replica can be master.

Publishing the last confirmation: a slave's agent writes it into its own broker's `startAcceptSendRequestTimeStamp`
(a hot key; a broker refuses sends until that wall time, so a past time on a slave changes nothing; the fence
uses future times only). Reading it needs only the broker port every replica already reaches.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

LEASE_AGENT_ANNOTATION = "rocketmq-operator.dev/lease-agent"
"""A BrokerGroup annotated with this set to ``enabled`` runs the lease agent beside each broker (both platforms). Opt-in
since the whole suite's first run with it on by default (2026-11-28, docs/fencing.md): a false fence under load
left a master half-fenced (the operator's hot-key pass rewrote part of the fence, so neither the agent nor the
policy recognised it to give it back)."""


def lease_agent_enabled(annotations: Mapping[str, str] | None) -> bool:
    return (annotations or {}).get(LEASE_AGENT_ANNOTATION, "").strip().lower() in {"enabled", "true"}


LEASE_PERIOD_S = 0.5
"""How often the agent starts a round."""
CALL_TIMEOUT_S = 1.0
"""How long one round waits for its broker, for the controller leader (the lookup and the query together) and for
its peers: a controller that answers late on a loaded machine still confirms (the lease counts from the round's
start), while a round stays short enough for the ordering of docs/fencing.md."""
CLOCK_SKEW_S = 0.25
"""How far two hosts' wall clocks may differ (peers publish wall times); NTP keeps nodes within milliseconds."""
PUBLISH_INTERVAL_S = 1.5
"""How often a slave's agent publishes its last confirmation: RocketMQ writes its config file (and three log lines) on
every update."""
AGENT_FENCE_LEASE_S = 10.0
"""The agent's fence shuts the send door for this long and is extended every round while it must hold; once it
lapses the replication policy gives the fence back (`core.failover.plan_abandoned_fences`), as for a switchover's."""


class LeaseVerdict(StrEnum):
    SILENT = "Silent"  # the local broker did not answer: it answers no client either
    SLAVE = "Slave"  # not master: holds no lease (publishes its last confirmation instead)
    CONFIRMED = "Confirmed"  # the controller leader names this broker master
    RUNNING = "Running"  # no controller answered, the lease has not lapsed yet
    FAILSAFE = "Failsafe"  # the lease lapsed, but no replica of the group reaches a controller either
    FENCE = "Fence"  # deposed, or cut off from controllers that others reach: refuse every write


@dataclass(frozen=True)
class LeaseBounds:
    lease_s: float
    period_s: float = LEASE_PERIOD_S
    clock_skew_s: float = CLOCK_SKEW_S
    publish_interval_s: float = PUBLISH_INTERVAL_S
    failsafe_until_s: float = 0.0  # the failsafe ends this long after the last confirmation (0: no failsafe)
    heartbeat_timeout_s: float = 10.0  # the controllers' (RocketMQ's `controllerHeartBeatTimeoutMills`)
    call_timeout_s: float = CALL_TIMEOUT_S

    @property
    def failsafe(self) -> bool:
        """Whether a live peer's publication is sure to be seen by the time the lease lapses (module doc), and the
        failsafe has any time left before the controllers could return and elect at once."""
        seen = self.lease_s > self.publish_interval_s + 3 * self.period_s + 2 * self.clock_skew_s
        return seen and self.failsafe_until_s > self.lease_s

    @classmethod
    def for_heartbeat_timeout(cls, heartbeat_timeout_ms: int | None) -> LeaseBounds:
        """From the controllers' heartbeat timeout T (RocketMQ's default 10 s when unknown): a lease of T/2 - 1 s (at
        least two rounds), a failsafe that ends at T - 4 s (the broker's 1 s heartbeat interval, a round's start and
        its calls, and a second to spare: docs/fencing.md, "The ordering")."""
        timeout_s = (heartbeat_timeout_ms or 10_000) / 1000
        return cls(
            lease_s=max(2 * LEASE_PERIOD_S, timeout_s / 2 - 1.0),
            failsafe_until_s=timeout_s - 4.0,
            heartbeat_timeout_s=timeout_s,
        )


@dataclass(frozen=True)
class ControllerView:
    """The controller leader's answer about this broker's group."""

    master_broker_id: int | None
    master_epoch: int
    sync_state_set: frozenset[int]


@dataclass(frozen=True)
class PeerFacts:
    """One electable peer as this round read it: None where it did not answer."""

    is_master: bool | None
    confirmed_wall_s: float | None  # the wall time of its agent's last confirmation (published), if any


@dataclass(frozen=True)
class LeaseFacts:
    now_s: float  # monotonic
    wall_s: float  # wall clock, to compare with what peers publish
    is_master: bool | None  # the local broker's own answer; None: it did not answer
    broker_id: int | None  # this broker's id as the controller lists its address
    controller: ControllerView | None  # this round's answer; None: no controller leader answered
    confirmed_at_s: float | None  # monotonic start of the last round that confirmed this broker (None: never)
    confirmed_wall_s: float | None  # the same round's start on the wall clock
    peers: Mapping[int, PeerFacts]  # the electable peers (last confirmed SyncStateSet minus this broker)
    controllers_gone: bool = False  # every controller was gone (refused, or unresolvable) since the last confirmation


@dataclass(frozen=True)
class LeaseDecision:
    verdict: LeaseVerdict
    reason: str

    lapsed: bool = False  # a fence because the lease lapsed (not a deposition): the agent may give it back
    drop_slaves: bool = False  # the fence also drops the broker's slaves (`control.fence.DROP_SLAVES`)

    @property
    def fence(self) -> bool:
        return self.verdict is LeaseVerdict.FENCE


def decide_lease(facts: LeaseFacts, bounds: LeaseBounds) -> LeaseDecision:
    """See the module doc."""
    if facts.is_master is None:
        return LeaseDecision(LeaseVerdict.SILENT, "the broker does not answer")
    if not facts.is_master:
        return LeaseDecision(LeaseVerdict.SLAVE, "the broker is a slave")
    view = facts.controller
    if view is not None:
        if view.master_broker_id is not None and view.master_broker_id == facts.broker_id:
            return LeaseDecision(
                LeaseVerdict.CONFIRMED, f"the controller leader names it master (epoch {view.master_epoch})"
            )
        named = "no master" if view.master_broker_id is None else f"broker {view.master_broker_id} master"
        return LeaseDecision(
            LeaseVerdict.FENCE,
            f"deposed: the controller leader names {named} (epoch {view.master_epoch}), this broker still answers "
            "as master",
            drop_slaves=True,
        )
    # The failsafe's end drops the slaves only once the controller may have elected another: the controllers are out
    # for everyone, and dropped slaves stall writes for their 5 s reconnection after the give-back. A master cut off
    # from controllers that others reach drops them with its fence: the controller will elect another, and a slave
    # that a stale route sends back to this live master would stay out of the new master's SyncStateSet.
    past_timeout = facts.confirmed_at_s is None or facts.now_s - facts.confirmed_at_s >= bounds.heartbeat_timeout_s
    if facts.confirmed_at_s is None:
        silent_for = "since the agent started"
    else:
        age = facts.now_s - facts.confirmed_at_s
        if age < bounds.lease_s:
            return LeaseDecision(
                LeaseVerdict.RUNNING, f"no controller leader answers; lease {bounds.lease_s - age:.1f} s left"
            )
        silent_for = f"for {age:.1f} s (lease {bounds.lease_s:g} s)"
        # A controller whose process is gone comes back with an empty heartbeat table (nothing stale to elect on);
        # one that timed out may be paused or cut off and return holding this master's heartbeats as stale.
        if bounds.failsafe and age >= bounds.failsafe_until_s and not facts.controllers_gone:
            return LeaseDecision(
                LeaseVerdict.FENCE,
                f"no controller leader answered {silent_for}: controllers that return now hold its heartbeats as "
                "stale and may elect another replica at once (RocketMQ's heartbeat timeout), so the failsafe ends",
                lapsed=True,
                drop_slaves=past_timeout,
            )
    blocker = _failsafe_blocker(facts, bounds)
    if blocker is None:
        return LeaseDecision(
            LeaseVerdict.FAILSAFE,
            f"no controller leader answered {silent_for}, and no replica of the group reaches one either: "
            "no one can be elected, so it keeps serving",
        )
    return LeaseDecision(
        LeaseVerdict.FENCE,
        f"no controller leader confirmed it {silent_for}, and {blocker}",
        lapsed=True,
        drop_slaves=True,
    )


def _failsafe_blocker(facts: LeaseFacts, bounds: LeaseBounds) -> str | None:
    """Why the group's controllers cannot be taken as out for everyone (None: they are)."""
    if facts.confirmed_at_s is None or facts.confirmed_wall_s is None:
        return "it never had a lease (its SyncStateSet peers are unknown)"
    if not bounds.failsafe:
        return f"a lease of {bounds.lease_s:g} s is too short to tell a controller outage from a partition"
    since = facts.confirmed_wall_s + 2 * bounds.period_s + bounds.clock_skew_s
    for broker_id, peer in sorted(facts.peers.items()):
        if peer.is_master is None:
            return f"peer broker {broker_id} does not answer (it may be elected meanwhile)"
        if peer.is_master:
            return f"peer broker {broker_id} answers as master"
        if peer.confirmed_wall_s is None:
            return f"peer broker {broker_id} publishes no confirmation (no agent runs there, or it is fenced)"
        if peer.confirmed_wall_s > since:
            ago = max(0.0, facts.wall_s - peer.confirmed_wall_s)  # clocks differ by up to the skew
            return (
                f"peer broker {broker_id} reached a controller leader {ago:.1f} s "
                "ago, after this broker last did: the controllers are alive, this broker is cut off from them"
            )
    return None


def may_give_back(*, own_lease_fence: bool, fenced_at_epoch: int | None, confirmed_epoch: int) -> bool:
    """Whether the agent gives back a fence of its own once the controller leader names its broker master again: only
    a fence it set because its lease lapsed (never a deposed broker's, a user's or a switchover's), and only at the
    epoch it held when it fenced (no election can have happened in between; one that did is the replication
    policy's to judge, as for any fence left behind)."""
    return own_lease_fence and fenced_at_epoch is not None and fenced_at_epoch == confirmed_epoch


def published_confirmation(config: Mapping[str, str], door_key: str, wall_s: float) -> float | None:
    """The wall time (s) a slave's agent published in its broker's send door: a past time. None when there is
    none, or the door holds a future time (a fence shuts it until then: not a publication)."""
    value = config.get(door_key, "")
    if not value.isdigit() or int(value) <= 0:
        return None
    published = int(value) / 1000
    # A publication is a past time on the peer's clock; read after a slow call it may even be later than the
    # reader's round. A fence's door is at least AGENT_FENCE_LEASE_S / 2 ahead (extended below that).
    return published if published <= wall_s + AGENT_FENCE_LEASE_S / 4 else None


def may_publish(config: Mapping[str, str], door_key: str, wall_s: float) -> bool:
    """A slave's agent overwrites its broker's send door only when it holds no fence (no future time)."""
    value = config.get(door_key, "0")
    return not value.lstrip("-").isdigit() or int(value) <= wall_s * 1000
