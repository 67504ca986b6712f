"""A producer and a committing consumer group in threads of their own, for the tests that grow and shrink a cluster
by broker groups (local: tests/integration/test_group_scale_real.py; Kubernetes: tests/e2e/test_group_scale.py).

`Producer(name_servers, topic)`: a steady producer; `acked(broker)` lists the keys acknowledged so far (by one
group). `Readers(name_servers, topic, group)`: reads the topic to its end again and again, committing the group's
offsets after each read, so that a group's lag is what it has not read yet; `paused` holds it, `keys` is every key
it read, `describe()` what its reads last saw (for a wait's failure message). A read that fails in any way is read
again: a reader thread that died on one timeout would leave a group's lag for good (CI, 2026-12-02)."""

from __future__ import annotations

import asyncio
import threading

from rocketmq_operator.tools.consume import consume
from rocketmq_operator.tools.produce import SteadyProducer


class Producer:
    def __init__(self, name_servers: list[str], topic: str, rate: float = 40.0) -> None:
        self.producer = SteadyProducer(topic, rate, namesrv=name_servers, size=128, timeout=3.0, retries=2)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)

    async def _run(self) -> None:
        await self.producer.start()
        while not self.stop.is_set():
            await asyncio.sleep(0.2)
        await self.producer.stop()

    def acked(self, broker: str | None = None) -> list[str]:
        return [r.key for r in list(self.producer.records) if r.ok and (broker is None or r.broker_name == broker)]


READ_IDLE_S = 20.0
"""A read ends once every queue has reached where it ended when the read began (``to_end``); this only ends one
that stalls. At 2 s, a queue whose pulls failed for 2 s on a loaded machine (load 50-70 on two cores) could end a
read before a drained group's queues were read (a reading of the code: the deletion that waited for good in CI on
2026-12-02 was not traced to it)."""


class Readers:
    def __init__(self, name_servers: list[str], topic: str, group: str) -> None:
        self.name_servers, self.topic, self.group = name_servers, topic, group
        self.keys: set[str] = set()
        self.rounds = 0
        self.last_errors: dict[str, int] = {}
        self.last_failure = ""
        self.failures = 0
        self.paused = threading.Event()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)

    async def _run(self) -> None:
        while not self.stop.is_set():
            if self.paused.is_set():
                await asyncio.sleep(0.2)
                continue
            await self.read_once()

    async def read_once(self) -> None:
        try:
            report = await consume(
                self.name_servers, self.topic, group=self.group, commit=True, read_from="master", to_end=True,
                idle_timeout=READ_IDLE_S,
            )  # fmt: skip
        except Exception as exc:  # a group going away under the read, a timeout: read again
            self.failures += 1
            self.last_failure = f"{type(exc).__name__}: {exc}"
            await asyncio.sleep(0.5)
            return
        self.keys |= set(report.keys)
        self.rounds += 1
        self.last_errors = dict(report.errors)

    def describe(self) -> str:
        state = "paused" if self.paused.is_set() else "stopped" if self.stop.is_set() else "reading"
        alive = "alive" if self.thread.is_alive() else "thread ended"
        return (
            f"readers of {self.group}: {state}, {alive}, {self.rounds} reads, {len(self.keys)} keys, last read's errors"
            f" {self.last_errors or 'none'}, {self.failures} failed reads (last: {self.last_failure or 'none'})"
        )
