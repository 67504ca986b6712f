"""What one BrokerGroup's passes remember from one pass to the next on Kubernetes, typed.

Contract: one `GroupMemory` per BrokerGroup, kept in kopf's per-resource memo by the handlers and handed to
every step of the group pass. It holds only what cannot be derived again from the cluster and the brokers: the
replication policy's grace clocks and deposed masters (`PolicyMemory`), the topics' and users' progress, and
what was already said once (a log line or an Event per change, not per pass). Losing it (an operator restart)
costs a grace period and a repeated message, never a wrong action.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rocketmq_operator.control.auth import AuthMemory
from rocketmq_operator.control.policy import PolicyMemory
from rocketmq_operator.control.topics import GroupTopicMemory


@dataclass
class GroupMemory:
    policy: PolicyMemory = field(default_factory=PolicyMemory)
    topics: GroupTopicMemory = field(default_factory=GroupTopicMemory)
    auth: AuthMemory = field(default_factory=AuthMemory)
    said_auth_problems: list[str] | None = None
    said_hot_keys: dict[str, str] = field(default_factory=dict)  # per replica, what applying its hot keys said
    said_roll_fenced: frozenset[str] | None = None  # the fenced replicas the roll said it waits for
    said_storage_reason: str | None = None
    said_drain_reason: str | None = None
    said_nodes_lost: tuple[str, ...] = ()  # the lost replicas (replica@node) last announced
