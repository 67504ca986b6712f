"""Writable queues, round-robin selection, route refresh and topic creation."""

from __future__ import annotations

import asyncio

import pytest
from tools_fakes import FakeClient, make_route

from rocketmq_operator.remoting import BrokerData, ClusterInfo, QueueData, TopicRoute
from rocketmq_operator.tools import QueueSelector, ToolError, TopicRouter, WriteQueue, ensure_topic, writable_queues
from rocketmq_operator.tools.routing import broker_address


def test_writable_queues_only_writable_masters_sorted() -> None:
    route = TopicRoute(
        "t",
        (
            QueueData("b", 4, 2, 6),
            QueueData("a", 4, 3, 6),
            QueueData("ro", 4, 4, 4),  # read-only
            QueueData("nomaster", 4, 4, 6),
        ),
        (
            BrokerData("c", "a", {0: "a0", 1: "a1"}),
            BrokerData("c", "b", {0: "b0"}),
            BrokerData("c", "ro", {0: "r0"}),
            BrokerData("c", "nomaster", {2: "n2"}),
        ),
    )
    assert writable_queues(route) == (
        WriteQueue("a", 0, "a0"),
        WriteQueue("a", 1, "a0"),
        WriteQueue("a", 2, "a0"),
        WriteQueue("b", 0, "b0"),
        WriteQueue("b", 1, "b0"),
    )
    assert writable_queues(None) == ()


def test_round_robin_covers_every_queue_evenly() -> None:
    queues = writable_queues(make_route("t", {"a": {0: "a0"}, "b": {0: "b0"}}, queues=3))
    selector = QueueSelector()
    picks = [selector.select(queues) for _ in range(12)]
    assert picks[:6] == list(queues) and picks[6:] == list(queues)


def test_retry_avoids_failed_broker_when_possible() -> None:
    queues = writable_queues(make_route("t", {"a": {0: "a0"}, "b": {0: "b0"}}, queues=2))
    selector = QueueSelector()
    for _ in range(8):
        pick = selector.select(queues, avoid_broker="a")
        assert pick is not None and pick.broker_name == "b"
    single = writable_queues(make_route("t", {"a": {0: "a0"}}, queues=4))
    selector = QueueSelector()
    first = selector.select(single)
    second = selector.select(single, avoid_broker="a")
    assert first is not None and second is not None and first.queue_id != second.queue_id
    assert QueueSelector().select(()) is None


def test_broker_address_fallbacks() -> None:
    broker = BrokerData("c", "a", {0: "m", 3: "s3"})
    assert broker_address(broker, 3) == ("s3", 3)
    assert broker_address(broker, 1) == ("m", 0)
    assert broker_address(BrokerData("c", "a", {4: "s4", 2: "s2"}), 1) == ("s2", 2)
    assert broker_address(None, 0) is None and broker_address(BrokerData("c", "a", {}), 0) is None


async def test_router_refresh_coalesces_and_keeps_route_on_failure() -> None:
    route = make_route("t", {"a": {0: "a0"}})
    client = FakeClient(routes={"t": route})
    router = TopicRouter(client, "t", route=route)
    seen = router.generation
    assert await router.refresh(seen)
    assert client.route_lookups == 1 and router.generation == seen + 1
    assert await router.refresh(seen)  # someone already refreshed since `seen`
    assert client.route_lookups == 1
    client.route_errors = 1
    assert await router.refresh(router.generation)  # failed, old route kept
    assert router.lookup_failures == 1 and router.route is route and router.last_error


async def test_name_servers_not_ready_keep_the_route_and_are_waited_for() -> None:
    """Name servers in their first waitSecondsForService: a router keeps the route it has; topic lookup waits
    for them (as a producer keeps looking up) and, past its wait, says what they answered and what to do."""
    route = make_route("t", {"a": {0: "a0"}})
    client = FakeClient(routes={"t": route}, routes_not_ready=1)
    router = TopicRouter(client, "t", route=route)
    assert await router.refresh(router.generation)
    assert router.route is route and router.lookup_failures == 1 and "not ready" in (router.last_error or "")
    client.routes_not_ready = 3
    assert await ensure_topic(client, "t", create=False, poll_s=0.0) is route
    assert client.routes_not_ready == 0
    client.routes_not_ready = 10**9
    with pytest.raises(ToolError, match="every name server answered 'name server not ready' for 0s"):
        await ensure_topic(client, "t", wait_s=0.0, poll_s=0.0)


async def test_router_periodic_refresh() -> None:
    client = FakeClient(routes={"t": make_route("t", {"a": {0: "a0"}})})
    router = TopicRouter(client, "t", refresh_interval=0.0)
    queue, _ = await router.pick()
    assert queue is not None and client.route_lookups == 1


def _cluster(*clusters: tuple[str, dict[str, dict[int, str]]]) -> ClusterInfo:
    brokers = {name: BrokerData(c, name, addrs) for c, group in clusters for name, addrs in group.items()}
    return ClusterInfo(brokers, {c: tuple(sorted(group)) for c, group in clusters})


async def test_ensure_topic_existing_topic_is_not_created() -> None:
    route = make_route("t", {"a": {0: "a0"}})
    client = FakeClient(routes={"t": route}, cluster=_cluster(("c1", {"a": {0: "a0"}})))
    assert await ensure_topic(client, "t") is route
    assert client.created == []


async def test_ensure_topic_creates_on_every_master_of_the_only_cluster() -> None:
    client = FakeClient(cluster=_cluster(("c1", {"a": {0: "a0", 1: "a1"}, "b": {0: "b0"}, "x": {1: "x1"}})))
    route = await ensure_topic(client, "t", poll_s=0.0)
    assert sorted(client.created) == [("a0", "t", 4, 4), ("b0", "t", 4, 4)]
    assert {q.broker_name for q in writable_queues(route)} == {"a", "b"}


async def test_ensure_topic_cluster_choice() -> None:
    info = _cluster(("c1", {"a": {0: "a0"}}), ("c2", {"b": {0: "b0"}}))
    with pytest.raises(ToolError, match=r"2 clusters.*--cluster"):
        await ensure_topic(FakeClient(cluster=info), "t")
    with pytest.raises(ToolError, match="cluster 'nope' unknown"):
        await ensure_topic(FakeClient(cluster=info), "t", cluster="nope")
    client = FakeClient(cluster=info)
    await ensure_topic(client, "t", cluster="c2", poll_s=0.0)
    assert client.created == [("b0", "t", 4, 4)]


async def test_ensure_topic_errors() -> None:
    with pytest.raises(ToolError, match="does not exist"):
        await ensure_topic(FakeClient(cluster=_cluster(("c1", {"a": {0: "a0"}}))), "t", create=False, wait_s=0.0)
    with pytest.raises(ToolError, match="route lookup"):
        await ensure_topic(FakeClient(route_errors=1), "t")
    with pytest.raises(ToolError, match=r"route lookup for topic 't' failed \(tried for 0.01s\)"):
        await ensure_topic(FakeClient(route_errors=10_000), "t", retry_s=0.01, poll_s=0.001)
    with pytest.raises(ToolError, match="no master"):
        await ensure_topic(FakeClient(cluster=_cluster(("c1", {"a": {1: "a1"}}))), "t")
    down = FakeClient(cluster=_cluster(("c1", {"a": {0: "a0"}})), down={"a0"})
    with pytest.raises(ToolError, match="creating topic"):
        await ensure_topic(down, "t")


async def test_ensure_topic_without_creation_waits_for_a_route_to_return() -> None:
    """A name server that restarted knows the topic again once its brokers re-register: a producer with topic
    creation off waits for the route (as a client's producer keeps looking it up) instead of giving up at once."""
    client = FakeClient()
    route = make_route("t", {"a": {0: "a0"}})

    async def register_later() -> None:
        while client.route_lookups < 3:
            await asyncio.sleep(0)
        client.routes["t"] = route

    registering = asyncio.create_task(register_later())
    assert await ensure_topic(client, "t", create=False, wait_s=60.0, poll_s=0.0) is route
    await registering
    assert client.route_lookups >= 3 and client.created == []
    with pytest.raises(ToolError, match=r"does not exist: namesrv had no route for it for 0s.*--no-create-topic"):
        await ensure_topic(FakeClient(), "t", create=False, wait_s=0.0)


async def test_ensure_topic_tries_a_failed_lookup_again_within_retry_s() -> None:
    """A name server that answers late under load (the CPU-hog run: one lookup timed out after 1 s and the pinned
    producer exited before its first send) is tried again, as a Java producer keeps looking the route up."""
    route = make_route("t", {"a": {0: "a0"}})
    client = FakeClient(routes={"t": route}, route_errors=2)
    assert await ensure_topic(client, "t", retry_s=60.0, poll_s=0.0) is route
    assert client.route_lookups == 3
