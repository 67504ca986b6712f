"""`KubeClient`'s own worker threads: every request of the synchronous official client runs on them (not asyncio's
default executor, 6 threads on 2 cores, which queued every group's pass behind 6 requests in flight), up to
`API_THREADS` at once, with a pooled connection for each; `close` closes the connections and ends the threads, and
a request after it (a timer kopf left running at the operator's exit) ends that pass quietly."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
import time
from typing import Any

import pytest

from rocketmq_operator.platforms.kubernetes import kube
from rocketmq_operator.platforms.kubernetes.handlers import cut_short_when_stopping
from rocketmq_operator.platforms.kubernetes.kube import API_THREADS, KubeClient, KubeClientClosed, KubeError

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
    # A closed client sends nothing more, and says why (a timer kopf left running past the cleanup asks again).
    with pytest.raises(KubeClientClosed, match="HTTP 503: the Kubernetes client is closed"):
        await client.get("Pod", "ns", "p")
    assert client.closed
    await client.close()  # once is enough
    assert len(dynamic.closed_in) == 1


async def test_the_requests_before_the_close_run_and_none_after_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kube, "API_THREADS", 1)  # one worker: what runs when is the queue's order
    release = threading.Event()

    class Held(FakeDynamic):
        def get(self, resource: Any = None, **options: Any) -> Any:
            if resource is not None and options["name"] == "held":
                release.wait(10.0)
            return super().get(resource, **options)

    client = KubeClient(Held(together=1))
    held = asyncio.ensure_future(client.get("Pod", "ns", "held"))
    await asyncio.sleep(0.05)  # the worker holds it
    queued = asyncio.ensure_future(client.get("Pod", "ns", "queued"))  # asked before the close: answered
    await asyncio.sleep(0)
    closing = asyncio.ensure_future(client.close())
    await asyncio.sleep(0)  # the close has begun, waiting its turn behind them
    with pytest.raises(KubeClientClosed):  # asked after: refused at once, never queued
        await client.get("Pod", "ns", "late")
    release.set()
    assert await held == {"metadata": {"name": "held"}}
    assert await queued == {"metadata": {"name": "queued"}}
    await closing


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


def test_a_timer_cut_short_by_the_closed_client_ends_quietly(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("test.handlers")
    with caplog.at_level(logging.INFO, logger="test.handlers"), cut_short_when_stopping(logger):
        raise KubeClientClosed()
    assert caplog.messages == ["pass cut short: the operator is stopping"]
    with pytest.raises(KubeError), cut_short_when_stopping(logger):  # any other refusal is the pass's to report
        raise KubeError(500, "etcd is down")
