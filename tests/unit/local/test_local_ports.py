"""Port allocation: packing, deterministic block choice, skipping busy ports (pure, table-driven)."""

from __future__ import annotations

import socket

import pytest

from rocketmq_operator.platforms.local.ports import (
    BROKER_OFFSETS,
    PORT_HIGH,
    PORT_LOW,
    PortError,
    PortNeed,
    all_free,
    allocate,
    candidate_bases,
    occupied,
    pack,
    port_is_free,
    seed_for,
    span,
)

QUICKSTART = [
    PortNeed("ctl-0.namesrv"),
    PortNeed("ctl-0.controller"),
    PortNeed("b-0.listen", BROKER_OFFSETS),
    PortNeed("b-1.listen", BROKER_OFFSETS),
    PortNeed("b-2.listen", BROKER_OFFSETS),
]


@pytest.mark.parametrize(
    ("needs", "base", "expected"),
    [
        ([PortNeed("a")], 20000, {"a": 20000}),
        ([PortNeed("a"), PortNeed("b")], 20000, {"a": 20000, "b": 20001}),
        ([PortNeed("b", BROKER_OFFSETS)], 20000, {"b": 20002}),
        (QUICKSTART, 22900, {"ctl-0.namesrv": 22900, "ctl-0.controller": 22901, "b-0.listen": 22904,
                             "b-1.listen": 22908, "b-2.listen": 22912}),
    ],
)  # fmt: skip
def test_pack(needs: list[PortNeed], base: int, expected: dict[str, int]) -> None:
    assert pack(needs, base) == expected


def test_pack_rejects_duplicate_keys() -> None:
    with pytest.raises(ValueError, match="duplicate"):
        pack([PortNeed("a"), PortNeed("a")], 20000)


def test_broker_blocks_keep_vip_and_ha_ports_free() -> None:
    ports = pack(QUICKSTART, 20000)
    used = occupied(QUICKSTART, ports)
    assert len(used) == len(set(used)) == span(QUICKSTART) == 14
    for key in ("b-0.listen", "b-1.listen", "b-2.listen"):
        assert {ports[key] - 2, ports[key] + 1} <= set(used)  # VIP server and HA server
    assert used == list(range(20000, 20014))  # packed without gaps or overlaps


def test_candidate_bases_are_deterministic_and_cover_the_range() -> None:
    seed = seed_for("/tmp/some/state")
    first = candidate_bases(seed, 14)
    assert first == candidate_bases(seed, 14)
    assert len(set(first)) == len(first) == (PORT_HIGH - PORT_LOW) // 100
    assert all(b >= PORT_LOW and b + 100 <= PORT_HIGH for b in first)
    assert candidate_bases(seed + 1, 14)[0] == first[1]


def test_wide_requests_get_wider_blocks() -> None:
    bases = candidate_bases(0, 250)
    assert bases[1] - bases[0] == 250


def test_allocate_same_seed_same_ports() -> None:
    a = allocate(QUICKSTART, 1234, lambda p: True)
    assert a == allocate(QUICKSTART, 1234, lambda p: True)
    assert a["ctl-0.namesrv"] == candidate_bases(1234, 14)[0]


def test_allocate_skips_a_block_with_a_busy_port() -> None:
    first = candidate_bases(99, 14)[0]
    busy = {first + 5}  # inside the first block: the whole block is skipped
    ports = allocate(QUICKSTART, 99, lambda p: p not in busy)
    assert ports["ctl-0.namesrv"] == candidate_bases(99, 14)[1]
    assert not busy & set(occupied(QUICKSTART, ports))


def test_allocate_fails_when_nothing_is_free() -> None:
    with pytest.raises(PortError, match="no block"):
        allocate(QUICKSTART, 7, lambda p: False)


def test_allocate_nothing() -> None:
    assert allocate([], 7, lambda p: False) == {}


@pytest.mark.parametrize(
    ("ports", "busy", "expected"),
    [
        ({"a": 20000, "b": 20003}, set(), True),
        ({"a": 20000, "b": 20003}, {20001}, False),  # b's VIP port
        ({"a": 20000, "b": 20003}, {20004}, False),  # b's HA port
        ({"a": 20000}, set(), False),  # b missing
    ],
)
def test_all_free(ports: dict[str, int], busy: set[int], expected: bool) -> None:
    needs = [PortNeed("a"), PortNeed("b", BROKER_OFFSETS)]
    assert all_free(needs, ports, lambda p: p not in busy) is expected


def test_port_is_free_sees_a_listener() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert not port_is_free(port)
    assert port_is_free(port)
