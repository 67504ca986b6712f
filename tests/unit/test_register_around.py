"""`control.routes.register_around`, the end of a switchover: once every name server lists the new master (each
asked for the group's own members, GET_BROKER_MEMBER_GROUP), the other replicas register again; a name server
that does not list it is asked once to take the master's registration, and one that still does not (or does not
answer) is named in a step, with no replica registered."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest

from rocketmq_operator.control.routes import register_around
from rocketmq_operator.core.observation import ReplicaObservation
from rocketmq_operator.remoting import BrokerMemberGroup, RemotingException

CLUSTER, GROUP = "c", "broker-a"
NS = ("10.0.0.8:9876", "10.0.0.9:9876")
ADDR = {1: "10.0.0.1:10911", 2: "10.0.0.2:10911", 3: "10.0.0.3:10911"}
NEW_MASTER = 2


@dataclass
class NameServers:
    """What each name server lists as the group's master: the old one until the new master registers (any
    brokerPermission update makes it register with every name server), for ever (``stale``), or no answer."""

    lagging: set[str] = field(default_factory=set)  # list the old master until the new one registers again
    stale: set[str] = field(default_factory=set)  # list the old master whatever happens
    down: set[str] = field(default_factory=set)
    namesrv_addrs: tuple[str, ...] = NS
    registered: list[tuple[str, str]] = field(default_factory=list)  # (address, brokerPermission)
    reads: list[tuple[str, str, str | None]] = field(default_factory=list)

    async def get_broker_member_group(
        self, cluster: str, broker_name: str, *, namesrv: str | None = None, timeout: float | None = None
    ) -> BrokerMemberGroup:
        self.reads.append((cluster, broker_name, namesrv))
        if namesrv in self.down:
            raise RemotingException(f"{namesrv} does not answer")
        old_listed = namesrv in self.stale or (namesrv in self.lagging and not self.master_registered)
        master = ADDR[1] if old_listed else ADDR[NEW_MASTER]
        return BrokerMemberGroup(cluster, broker_name, {0: master, 3: ADDR[3]})

    @property
    def master_registered(self) -> bool:
        return any(addr == ADDR[NEW_MASTER] for addr, _ in self.registered)

    async def get_broker_config(self, addr: str, **_: Any) -> dict[str, str]:
        return {"brokerPermission": "6"}

    async def update_broker_config(self, addr: str, config: dict[str, str], **_: Any) -> None:
        self.registered.append((addr, str(config["brokerPermission"])))


def replica(broker_id: int, *, reachable: bool = True) -> ReplicaObservation:
    return ReplicaObservation(f"{GROUP}-{broker_id - 1}", ADDR[broker_id], reachable, broker_id=broker_id)


REPLICAS = [replica(1), replica(2), replica(3), replica(3, reachable=False)]


def run(name_servers: NameServers) -> list[str]:
    return asyncio.run(
        register_around(name_servers, CLUSTER, GROUP, replica(NEW_MASTER), REPLICAS, timeout=1.0)  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("name_servers", "master_asked", "others_registered"),
    [
        pytest.param(NameServers(), False, True, id="every name server lists the new master"),
        pytest.param(NameServers(lagging={NS[1]}), True, True, id="one lags: the master registers, then the rest"),
        pytest.param(NameServers(stale={NS[0]}), True, False, id="one never lists it: no replica registers"),
        pytest.param(NameServers(down={NS[1]}), True, False, id="one does not answer: not listed"),
    ],
)
def test_the_replicas_register_again_once_every_name_server_lists_the_new_master(
    name_servers: NameServers, master_asked: bool, others_registered: bool
) -> None:
    steps = run(name_servers)
    # Only this group's members are asked for, with its cluster's name, of each of the client's name servers.
    assert {r[:2] for r in name_servers.reads} == {(CLUSTER, GROUP)}
    assert {r[2] for r in name_servers.reads} <= set(NS)
    master = [(ADDR[NEW_MASTER], "6")] if master_asked else []
    others = [(ADDR[1], "6"), (ADDR[3], "6")] if others_registered else []  # reachable, not the master
    assert name_servers.registered == master + others
    if others_registered:
        assert steps == [f"registered {GROUP}-0, {GROUP}-2 again: their name servers name the new master"]
    else:
        assert steps == [f"not every name server lists the new master {ADDR[NEW_MASTER]} yet: slaves learn it later"]


def test_no_name_servers_no_check() -> None:
    name_servers = NameServers(namesrv_addrs=())
    assert run(name_servers) == [] and name_servers.reads == [] and name_servers.registered == []
