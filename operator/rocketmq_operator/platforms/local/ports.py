"""Deterministic port allocation for the local platform.

Contract:

* A request is an ordered list of `PortNeed(key, offsets)`: the port given to `key` is `p`, and every `p + o`
  for `o` in `offsets` must be free. A broker needs `(-2, -1, 0, 1)`: the VIP server binds `listenPort-2`,
  the HA server `listenPort+1` (docs/notes/local-start.md), and its Prometheus exporter `listenPort-1`
  (spec.metrics; `placement.broker_placement`), so one block holds all of a broker's ports.
  A name server or controller needs `(0,)`; a proxy `(0, 1, 2)`: gRPC, remoting, and its exporter.
* `allocate(needs, seed, is_free)` is pure apart from `is_free`: the needs are packed in order into one block
  of consecutive ports; candidate blocks are tried in a fixed order that starts at a block chosen by `seed`
  (a hash of the state directory, see `seed_for`), so the same state directory gets the same ports whenever
  they are free and two state directories usually get different blocks. The blocks lie in
  `[PORT_LOW, PORT_HIGH)`, below Linux's default ephemeral range (32768-60999), so outgoing connections do not
  take them between allocation and start.
* `port_is_free(port)` binds 127.0.0.1 and 0.0.0.0 (RocketMQ's servers bind every address) with SO_REUSEADDR
  (as Netty does, so TIME_WAIT leftovers do not count as taken).
* Raises `PortError` when no block is free.
* `port_answers(address)` (async): whether something accepts TCP connections at `host:port`.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

PORT_LOW = 20000
PORT_HIGH = 32700
BLOCK = 100

BROKER_OFFSETS: tuple[int, ...] = (-2, -1, 0, 1)
PROXY_OFFSETS: tuple[int, ...] = (0, 1, 2)  # gRPC, remoting, Prometheus exporter (placement.proxy_ports)
SINGLE: tuple[int, ...] = (0,)


class PortError(RuntimeError):
    """No free ports for the requested layout."""


@dataclass(frozen=True)
class PortNeed:
    key: str
    offsets: tuple[int, ...] = SINGLE


def seed_for(text: str) -> int:
    return zlib.crc32(text.encode("utf-8"))


def pack(needs: Sequence[PortNeed], base: int) -> dict[str, int]:
    """Ports for `needs` packed from `base` upward, each need's lowest offset at the next unused port."""
    out: dict[str, int] = {}
    cursor = base
    for need in needs:
        if need.key in out:
            raise ValueError(f"duplicate port key {need.key!r}")
        port = cursor - min(need.offsets)
        out[need.key] = port
        cursor = port + max(need.offsets) + 1
    return out


def span(needs: Sequence[PortNeed]) -> int:
    """How many consecutive ports `pack` uses."""
    return sum(max(n.offsets) - min(n.offsets) + 1 for n in needs)


def occupied(needs: Sequence[PortNeed], ports: Mapping[str, int]) -> list[int]:
    """Every port the allocation `ports` needs free, in order."""
    return [ports[n.key] + o for n in needs for o in sorted(n.offsets)]


def candidate_bases(seed: int, width: int, low: int = PORT_LOW, high: int = PORT_HIGH) -> list[int]:
    """Block starts in trial order: blocks of max(BLOCK, width) ports, beginning at the seed's block."""
    size = max(BLOCK, -(-width // 10) * 10)
    count = (high - low) // size
    if count <= 0:
        raise PortError(f"{width} ports do not fit in [{low}, {high})")
    first = seed % count
    return [low + ((first + k) % count) * size for k in range(count)]


def allocate(
    needs: Sequence[PortNeed],
    seed: int,
    is_free: Callable[[int], bool],
    low: int = PORT_LOW,
    high: int = PORT_HIGH,
) -> dict[str, int]:
    if not needs:
        return {}
    width = span(needs)
    for base in candidate_bases(seed, width, low, high):
        ports = pack(needs, base)
        if all(is_free(p) for p in occupied(needs, ports)):
            return ports
    raise PortError(f"no block of {width} free ports in [{low}, {high}) on 127.0.0.1")


def all_free(needs: Sequence[PortNeed], ports: Mapping[str, int], is_free: Callable[[int], bool]) -> bool:
    """Whether a previous allocation can be reused: every key present and every port still free."""
    if any(n.key not in ports for n in needs):
        return False
    return all(is_free(p) for p in occupied(needs, ports))


def port_is_free(port: int) -> bool:
    for host in ("127.0.0.1", "0.0.0.0"):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((host, port))
            except OSError:
                return False
    return True


async def port_answers(address: str, timeout: float = 0.5) -> bool:
    host, _, port = address.rpartition(":")
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, int(port)), timeout)
    except (OSError, TimeoutError, ValueError):
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True


async def ports_answer(ports: Iterable[int], host: str = "127.0.0.1") -> bool:
    """Every port accepts a connection: a local proxy's readiness (what its pod's probes check on Kubernetes),
    shared by `local status`, `local up --wait` and the Proxy roll."""
    return all(await asyncio.gather(*(port_answers(f"{host}:{p}") for p in ports)))
