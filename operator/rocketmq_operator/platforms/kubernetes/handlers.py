"""Kopf handler registration on a fresh registry (no import-time side effects, no global registry)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Iterator
from typing import Any

import kopf

from rocketmq_operator.api.models import API_GROUP, API_VERSION
from rocketmq_operator.platforms.kubernetes.controller_pass import controller_pass
from rocketmq_operator.platforms.kubernetes.group_memory import GroupMemory
from rocketmq_operator.platforms.kubernetes.group_pass import drain_before_delete, observe_pass
from rocketmq_operator.platforms.kubernetes.kube import KubeClient, KubeClientClosed, connection_info
from rocketmq_operator.platforms.kubernetes.metrics import OperatorMetrics
from rocketmq_operator.platforms.kubernetes.proxy_pass import observe_proxy
from rocketmq_operator.platforms.kubernetes.reconcile import Outcome, reconcile
from rocketmq_operator.platforms.kubernetes.users import ensure_credentials, removal_left
from rocketmq_operator.remoting import RemotingClient

# Level-based resync period; tests shorten it to watch several no-op passes.
RESYNC_SECONDS = float(os.environ.get("ROCKETMQ_OPERATOR_RESYNC_SECONDS", "30"))
# How often each BrokerGroup's SyncStateSet, master and replicas are observed.
OBSERVE_SECONDS = float(os.environ.get("ROCKETMQ_OPERATOR_OBSERVE_SECONDS", "2"))
KINDS = ("brokergroups", "controllergroups", "proxies")


def pass_lock(memo: kopf.Memo) -> asyncio.Lock:
    """One resource's passes, one at a time: kopf runs a resource's change handler and its resync timer
    concurrently, and two passes that both find no certificate Secret both issue one; the second made the
    controllers restart to load it (an e2e run saw the name server go away under a producer). ``memo`` is the
    resource's own (kopf shares it between that resource's handlers)."""
    lock = memo.get("pass_lock")
    if not isinstance(lock, asyncio.Lock):
        lock = memo["pass_lock"] = asyncio.Lock()
    return lock


@contextlib.contextmanager
def cut_short_when_stopping(logger: kopf.Logger) -> Iterator[None]:
    """A pass kopf left running past the operator's cleanup (it orphans a timer that does not stop in time) ends
    at its next API request, quietly: the client is closed, and the next operator's first pass starts over."""
    try:
        yield
    except KubeClientClosed:
        logger.info("pass cut short: the operator is stopping")


def configure(settings: kopf.OperatorSettings) -> None:
    """The operator's kopf settings (kept apart so a unit test reads them)."""
    settings.posting.level = logging.INFO
    settings.watching.server_timeout = 300
    # A deleted resource keeps kopf's finalizer until its timers (resync, observe) have exited; one caught
    # mid-pass is looked at again only after this many seconds (kopf's default is 60). A CI run under load
    # saw `kubectl delete proxy --timeout=60s` time out on exactly that wait.
    settings.background.cancellation_polling = 1.0


def build_registry(metrics_port: int | None) -> kopf.OperatorRegistry:
    registry = kopf.OperatorRegistry()

    @kopf.on.startup(registry=registry)
    async def startup(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
        configure(settings)
        memo.kube = await KubeClient.connect()
        memo.remoting = RemotingClient(connect_timeout=1.0, request_timeout=2.0)
        memo.metrics = OperatorMetrics()
        if metrics_port:
            memo.metrics.serve(metrics_port)

    @kopf.on.login(registry=registry)
    def login(settings: kopf.OperatorSettings, **_: Any) -> kopf.ConnectionInfo | None:
        # Our own registry has none of kopf's default login handlers: in-cluster first, then kubeconfig
        # (the look-up `run` checked before kopf started).
        return connection_info(settings)

    @kopf.on.cleanup(registry=registry)
    async def cleanup(memo: kopf.Memo, **_: Any) -> None:
        kube = getattr(memo, "kube", None)
        if kube is not None:
            await kube.close()
        remoting = getattr(memo, "remoting", None)
        if remoting is not None:
            await remoting.close()

    @kopf.on.probe(id="api", registry=registry)
    async def probe_api(memo: kopf.Memo, **_: Any) -> bool:
        return getattr(memo, "kube", None) is not None

    async def run_pass(body: kopf.Body, memo: kopf.Memo, logger: kopf.Logger, trigger: str) -> None:
        raw: dict[str, Any] = dict(body)
        metrics: OperatorMetrics = memo.metrics
        kind = raw.get("kind", "?")
        kube = memo.kube
        writes_before = kube.writes
        try:
            async with pass_lock(memo):
                outcome: Outcome = await reconcile(kube, raw)
        except Exception:
            metrics.reconcile_errors.labels(kind=kind).inc()
            raise
        finally:
            metrics.api_writes.labels(kind=kind).inc(kube.writes - writes_before)
        metrics.reconcile_seconds.labels(kind=kind).observe(outcome.seconds)
        if outcome.applied:
            logger.info("%s: applied %s", trigger, ", ".join(outcome.applied))
            kopf.info(body, reason="Applied", message=", ".join(outcome.applied))
            if outcome.downgrade is not None:  # with the change that starts the roll: once, not every resync
                logger.warning("%s", outcome.downgrade)
                kopf.warn(body, reason="Downgrade", message=outcome.downgrade)
        if outcome.blocked_reason:
            logger.warning("%s: %s", outcome.blocked_reason, outcome.blocked_message)

    for plural in KINDS:

        @kopf.on.create(API_GROUP, API_VERSION, plural, registry=registry, id=f"{plural}-create")
        @kopf.on.update(API_GROUP, API_VERSION, plural, registry=registry, id=f"{plural}-update", field="spec")
        async def on_change(body: kopf.Body, memo: kopf.Memo, logger: kopf.Logger, **_: Any) -> None:
            await run_pass(body, memo, logger, "change")

        # Level-based: also the resume after an operator restart and the repair of deleted objects.
        @kopf.timer(
            API_GROUP,
            API_VERSION,
            plural,
            registry=registry,
            id=f"{plural}-resync",
            interval=RESYNC_SECONDS,
            initial_delay=1.0,
            idle=None,
        )
        async def resync(body: kopf.Body, memo: kopf.Memo, logger: kopf.Logger, **_: Any) -> None:
            with cut_short_when_stopping(logger):
                await run_pass(body, memo, logger, "resync")

    @kopf.timer(
        API_GROUP,
        API_VERSION,
        "brokergroups",
        registry=registry,
        id="brokergroups-observe",
        interval=OBSERVE_SECONDS,
        initial_delay=2.0,
        idle=None,
    )
    async def observe(body: kopf.Body, memo: kopf.Memo, logger: kopf.Logger, **_: Any) -> None:
        # memo is per resource (kopf copies the operator's memo): what the group's passes remember lives there.
        if "group_memory" not in memo:
            memo["group_memory"] = GroupMemory()
        before = memo.kube.writes
        try:
            with cut_short_when_stopping(logger):
                acted = await observe_pass(memo.kube, memo.remoting, memo.metrics, body, memo["group_memory"], logger)
                if acted:
                    # The roles changed in that pass (a failover, say): observe them now, not after the interval. On
                    # the three-node cluster the slave a failover left pointing at the dead master was re-pointed one
                    # interval (2 s) later, with every write refused meanwhile (minInSyncReplicas).
                    meta = body["metadata"]
                    fresh = await memo.kube.get("BrokerGroup", meta["namespace"], meta["name"])
                    if fresh is not None:
                        await observe_pass(memo.kube, memo.remoting, memo.metrics, fresh, memo["group_memory"], logger)
        finally:
            memo.metrics.api_writes.labels(kind="observer").inc(memo.kube.writes - before)

    @kopf.timer(
        API_GROUP,
        API_VERSION,
        "proxies",
        registry=registry,
        id="proxies-observe",
        interval=OBSERVE_SECONDS,
        initial_delay=2.0,
        idle=None,
    )
    async def observe_proxies(body: kopf.Body, memo: kopf.Memo, logger: kopf.Logger, **_: Any) -> None:
        before = memo.kube.writes
        try:
            with cut_short_when_stopping(logger):
                await observe_proxy(memo.kube, dict(body))
        finally:
            memo.metrics.api_writes.labels(kind="proxy-observer").inc(memo.kube.writes - before)

    @kopf.timer(
        API_GROUP,
        API_VERSION,
        "controllergroups",
        registry=registry,
        id="controllergroups-observe",
        interval=OBSERVE_SECONDS,
        initial_delay=2.0,
        idle=None,
    )
    async def observe_controllers(body: kopf.Body, memo: kopf.Memo, logger: kopf.Logger, **_: Any) -> None:
        before = memo.kube.writes
        try:
            with cut_short_when_stopping(logger):
                await controller_pass(memo.kube, memo.remoting, body, memo.metrics)
        finally:
            memo.metrics.api_writes.labels(kind="observer").inc(memo.kube.writes - before)

    @kopf.on.delete(API_GROUP, API_VERSION, "brokergroups", registry=registry, id="brokergroups-delete")
    async def on_group_delete(body: kopf.Body, memo: kopf.Memo, logger: kopf.Logger, **_: Any) -> None:
        # The group is drained before it goes (write off, every consumer group's lag 0, the send door shut); the
        # finalizer holds it meanwhile, and status.drain with the Drained condition says why. The observer's
        # timer has stopped: a failover meanwhile is not the operator's (docs/scaling.md).
        async with pass_lock(memo):
            held = await drain_before_delete(memo.kube, memo.remoting, body, logger)
        if held is not None:
            raise kopf.TemporaryError(held, delay=5)

    @kopf.on.delete(API_GROUP, API_VERSION, "topics", registry=registry, id="topics-delete")
    @kopf.on.delete(API_GROUP, API_VERSION, "consumergroups", registry=registry, id="consumergroups-delete")
    async def on_topic_delete(spec: kopf.Spec, status: kopf.Status, **_: Any) -> None:
        # deletionPolicy Keep (the default) leaves the topic or group, and its messages or offsets, on the brokers.
        # Delete: the BrokerGroups' observer passes delete it from their masters; the finalizer stays until
        # every placement reports it gone.
        if dict(spec).get("deletionPolicy", "Keep") != "Delete":
            return
        placements: list[dict[str, Any]] = list(dict(status or {}).get("placements") or [])
        left = [p.get("brokerGroup") for p in placements if p.get("exists")]
        if left:
            raise kopf.TemporaryError(f"still on the masters of {', '.join(map(str, left))}", delay=2)

    @kopf.on.create(API_GROUP, API_VERSION, "users", registry=registry, id="users-credentials")
    @kopf.on.resume(API_GROUP, API_VERSION, "users", registry=registry, id="users-credentials-resume")
    @kopf.on.update(API_GROUP, API_VERSION, "users", registry=registry, id="users-credentials-update", field="spec")
    async def on_user(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
        # The generated Secret exists as soon as the User does (a client can be configured before any group's
        # pass has asserted the user); the BrokerGroups' passes assert it and write the rest of the status.
        await ensure_credentials(memo.kube, dict(body))

    @kopf.on.delete(API_GROUP, API_VERSION, "users", registry=registry, id="users-delete")
    async def on_user_delete(body: kopf.Body, spec: kopf.Spec, status: kopf.Status, memo: kopf.Memo, **_: Any) -> None:
        # deletionPolicy Keep leaves the user on the brokers. Delete (the default): each BrokerGroup's pass deletes
        # it from every replica; the finalizer stays until no placement on a group that still exists may hold it
        # (a replica that was down would otherwise keep a deleted user and authenticate it once elected).
        if dict(spec).get("deletionPolicy", "Delete") != "Delete":
            return
        groups = [g["metadata"]["name"] for g in await memo.kube.list("BrokerGroup", body["metadata"]["namespace"])]
        left = removal_left(dict(status or {}), groups)
        if left:
            raise kopf.TemporaryError(f"still on replicas of {', '.join(left)}", delay=2)

    return registry
