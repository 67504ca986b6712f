"""`KubeClient`'s own worker threads: every request of the synchronous official client runs on them (not asyncio's
default executor, 6 threads on 2 cores, which queued every group's pass behind 6 requests in flight), up to
`API_THREADS` at once, with a pooled connection for each; `close` closes the connections and ends the threads."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from typing import Any

import pytest

from rocketmq_operator.platforms.kubernetes.kube import API_THREADS, KubeClient

caller = contextvars.ContextVar("caller", default="none")


class FakeDynamic:
    """The DynamicClient surface `KubeClient` uses; every GET waits until ``together`` of them are in flight."""

    def __init__(self, together: int) -> None:
        self.barrier = threading.Barrier(together, timeout=20.0)
        self.threads: list[str] = []
        self.contexts: list[str] = []
        self.client = self
        self.closed_in: list[str] = []
        self.resources = self

    def get(self, resource: Any = None, **options: Any) -> Any:
        if resource is None:  # resources.get(api_version=..., kind=...): discovery
            return ("resource", options["kind"])
        self.threads.append(threading.current_thread().name)
        self.contexts.append(caller.get())
        self.barrier.wait()  # BrokenBarrierError unless ``together`` requests run at once
        return {"metadata": {"name": options["name"]}}

    def close(self) -> None:
        self.closed_in.append(threading.current_thread().name)


def kube_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("kube-api")]


async def test_every_request_runs_on_the_clients_threads_up_to_its_bound_at_once() -> None:
    assert API_THREADS > 6  # more than asyncio's default executor has on 2 cores
    dynamic = FakeDynamic(together=API_THREADS)
    client = KubeClient(dynamic)
    caller.set("a group's pass")
    try:
        answers = await asyncio.gather(*(client.get("Pod", "ns", f"p{i}") for i in range(API_THREADS)))
    finally:
        await client.close()
    assert [a["metadata"]["name"] for a in answers if a] == [f"p{i}" for i in range(API_THREADS)]
    assert len(dynamic.threads) == API_THREADS and all(t.startswith("kube-api") for t in dynamic.threads)
    assert len(set(dynamic.threads)) == API_THREADS  # all in flight together: one thread each
    assert set(dynamic.contexts) == {"a group's pass"}  # the caller's context, as asyncio.to_thread gives


async def test_close_closes_the_connections_and_ends_the_threads() -> None:
    dynamic = FakeDynamic(together=1)
    client = KubeClient(dynamic)
    assert await client.get("Pod", "ns", "p") == {"metadata": {"name": "p"}}
    await client.close()
    assert len(dynamic.closed_in) == 1 and dynamic.closed_in[0].startswith("kube-api")
    deadline = time.monotonic() + 10.0
    while kube_threads() and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert kube_threads() == []
    with pytest.raises(RuntimeError):  # a closed client sends nothing more
        await client.get("Pod", "ns", "p")


def test_the_connection_pool_holds_one_connection_per_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    from kubernetes import client, dynamic

    built: list[Any] = []
    monkeypatch.setattr(dynamic, "DynamicClient", lambda api: built.append(api) or FakeDynamic(1))

    def pooled(configured: int | None) -> int:
        configuration = client.Configuration(host="https://127.0.0.1:6443")
        if configured is not None:
            configuration.connection_pool_maxsize = configured
        asyncio.run(KubeClient.from_configuration(configuration).close())
        return int(built[-1].rest_client.pool_manager.connection_pool_kw["maxsize"])

    # urllib3 keeps at most maxsize connections and discards any other after its request: one per thread at least.
    assert pooled(None) >= API_THREADS  # the official default is 5 per core
    assert pooled(2) == API_THREADS
    assert pooled(API_THREADS * 2) == API_THREADS * 2  # a larger pool configured is kept
