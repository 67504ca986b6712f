"""One observation of a broker group, the one shape every reader uses: `observe` builds it, `status`,
`failover` (through `control.observe.facts_from_state`), `topics` and the platforms read it.

Plain frozen values, no I/O: what could not be read is recorded (`GroupState.controller_error`,
`ReplicaObservation.reachable=False`), never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ReplicaEndpoint:
    """What the platform knows of a replica: its name (pod or local replica) and broker address."""

    name: str
    address: str  # host:listenPort, as the broker registers it


@dataclass(frozen=True)
class ReplicaObservation:
    name: str
    address: str
    reachable: bool
    broker_id: int | None = None  # the controller-assigned id (controller mode) or the configured id
    controller_alive: bool | None = None
    is_master: bool | None = None
    max_offset: int | None = None
    version: str | None = None
    error: str | None = None
    # A slave's HA client: where it replicates from (None until it learns the master's HA address, which
    # RocketMQ takes from a name-server registration; None for masters and unreadable HA status).
    ha_master_address: str | None = None
    # A master's HA connections (slaves replicating from it now); None for slaves and unreadable HA status.
    ha_connections: int | None = None


@dataclass(frozen=True)
class GroupState:
    group: str
    observed_at: float  # time.time() when the observation finished
    controller_mode: bool
    controller_reachable: bool = False
    controller_leader: str | None = None
    controller_error: str | None = None
    master_broker_id: int | None = None
    master_address: str | None = None
    master_epoch: int | None = None
    sync_state_set: tuple[int, ...] = ()
    sync_state_set_epoch: int | None = None
    replicas: tuple[ReplicaObservation, ...] = field(default_factory=tuple)
    # classic modes: slaves the master counts as in sync (HA connections within haMaxGapNotInSync)
    classic_in_sync_addresses: tuple[str, ...] = ()

    def replica_by_id(self, broker_id: int) -> ReplicaObservation | None:
        return next((r for r in self.replicas if r.broker_id == broker_id), None)

    @property
    def named_master(self) -> ReplicaObservation | None:
        """The replica the controller names master (by broker id), whatever it answers itself."""
        return self.replica_by_id(self.master_broker_id) if self.master_broker_id is not None else None

    @property
    def master(self) -> ReplicaObservation | None:
        if self.master_address:
            found = next((r for r in self.replicas if r.address == self.master_address), None)
            if found is not None:
                return found
        return next((r for r in self.replicas if r.is_master and r.reachable), None)
