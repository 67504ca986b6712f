"""Growing and shrinking a cluster by broker groups on the real cluster, under a producer on the host and a
committing consumer group, as a user does it with kubectl (on the second quickstart: tests/conftest.py
`E2E_WORKER_GROUPS`):

1. a BrokerGroup added to the quickstart's cluster gets the cluster's Topic and ConsumerGroup (placed by
   clusterName) and the producer sends to it after its next route refresh; a Topic placed on the quickstart's group
   by name stays there;
2. `kubectl rocketmq drain-group` while its consumers are paused: its queues read-only in the routes, status.drain
   with the lag; then `kubectl delete` of it while they have not read it: the operator holds the deletion
   (status.drain and the Drained condition say what is left and the fix);
3. once the consumers have read it, the deletion goes through and its pods go;
4. a second group (one replica, added first so that the group above joins a cluster of two) deleted while its
   messages are unread: held, then let go by the `rocketmq-operator.dev/force-delete` annotation, with a Warning
   Event naming what it dropped. Every acknowledged key was consumed but the forced group's.

And the metadata backup run in the operator's pod (docs/backup.md, "On Kubernetes"), restored after a topic is lost.
"""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
from typing import Any

from e2e.conftest import e2e_manifest
from e2e.e2e_helpers import kubectl_rocketmq
from group_load import Producer, Readers
from rocketmq_operator.core.group_drain import FORCE_ANNOTATION
from rocketmq_operator.remoting import RemotingClient
from rocketmq_operator.remoting.admin import TopicAdmin, TopicConfigInfo
from rocketmq_operator.remoting.codes import PERM_WRITE
from rocketmq_operator.remoting.errors import RemotingConnectionError
from rocketmq_operator.render.config import NAMESRV_PORT
from rocketmq_operator.tools.noloss import missing_acknowledged

ADDED, TOPIC, READERS = "broker-b", "scale-orders", "scale-readers"
SECOND = "broker-c"
"""A one-replica group added first, so that ADDED joins a cluster of two groups; removed at the end by force."""


def _plugin(node: Any, ns: str, *args: str) -> subprocess.CompletedProcess[str]:
    return kubectl_rocketmq(node, ns, *args)


async def _route(name_servers: list[str], topic: str = TOPIC) -> Any:
    async with RemotingClient(name_servers, connect_timeout=2.0, request_timeout=3.0) as client:
        return await client.get_route(topic, timeout=3.0)


PINNED = "scale-pinned"  # placed on the quickstart's group by name: it stays there when groups are added


def _manifests(pinned_on: str) -> str:
    docs = [
        {"apiVersion": "rocketmq-operator.dev/v1alpha1", "kind": "Topic", "metadata": {"name": PINNED},
         "spec": {"brokerGroups": [pinned_on], "readQueueNums": 2, "writeQueueNums": 2, "messageType": "NORMAL"}},
        {"apiVersion": "rocketmq-operator.dev/v1alpha1", "kind": "Topic", "metadata": {"name": TOPIC},
         "spec": {"clusterName": "DefaultCluster", "readQueueNums": 4, "writeQueueNums": 4, "messageType": "NORMAL"}},
        {"apiVersion": "rocketmq-operator.dev/v1alpha1", "kind": "ConsumerGroup", "metadata": {"name": READERS},
         "spec": {"clusterName": "DefaultCluster", "topics": [TOPIC]}},
    ]  # fmt: skip
    return "\n---\n".join(json.dumps(d) for d in docs)


def _added_group(controller_group: str, name: str = ADDED, replicas: int = 2) -> str:
    quorum = {"minInSyncReplicas": 1, "allAckInSyncStateSet": replicas > 1}
    return json.dumps(
        {"apiVersion": "rocketmq-operator.dev/v1alpha1", "kind": "BrokerGroup", "metadata": {"name": name},
         "spec": {"clusterName": "DefaultCluster", "replicas": replicas, "haMode": "controller",
                  "controllerRef": {"name": controller_group}, "quorum": quorum,
                  "storage": {"size": "1Gi"}, "resources": {"requests": {"cpu": "100m"}},
                  "jvm": {"heap": "512Mi"}}}
    )  # fmt: skip


def test_a_group_added_then_deleted_is_drained_first_with_no_loss(second_quickstart: Any) -> None:
    group = second_quickstart
    node, ns = group.node, group.ns
    node.kubectl("-n", ns, "apply", "-f", "-", input=_manifests(group.name))
    name_servers = [  # the name server pods' addresses, which the host reaches (a client outside the cluster)
        f"{p['status']['podIP']}:{NAMESRV_PORT}"
        for p in node.json("-n", ns, "get", "pods", "-l", f"rocketmq-operator.dev/group={group.controller_group}")[
            "items"
        ]
        if (p.get("status") or {}).get("podIP")
    ]
    assert name_servers, f"no pod of {group.controller_group} has an address"
    producer, readers = Producer(name_servers, TOPIC), Readers(name_servers, TOPIC, READERS)
    node.wait_for(f"topic {TOPIC} routed", lambda: group.name_servers_route(TOPIC)[0], timeout=300)
    producer.thread.start()
    readers.thread.start()

    def added(name: str = ADDED) -> dict[str, Any]:
        found = node.json("-n", ns, "get", "bg", "--field-selector", f"metadata.name={name}")["items"]
        return dict(found[0]) if found else {}

    try:
        # 0. A second group of the cluster (one replica), so that the group under test joins a cluster of two.
        node.kubectl("-n", ns, "apply", "-f", "-", input=e2e_manifest(_added_group(group.controller_group, SECOND, 1)))
        node.wait_for(f"{SECOND} writable", lambda: (added(SECOND).get("status") or {}).get("writable") is True,
                      timeout=600)  # fmt: skip
        node.wait_for(f"the producer sends to {SECOND}", lambda: len(producer.acked(SECOND)) >= 20, timeout=180,
                      interval=0.5)  # fmt: skip

        # 1. Added: writable once it has the cluster's topic; the producer finds it.
        node.kubectl("-n", ns, "apply", "-f", "-", input=e2e_manifest(_added_group(group.controller_group)))
        seconds = node.wait_for(
            f"{ADDED} writable", lambda: (added().get("status") or {}).get("writable") is True, timeout=600
        )
        print(f"\n{ADDED} writable {seconds:.0f} s after it was applied")
        seconds = node.wait_for(
            f"the producer sends to {ADDED}", lambda: len(producer.acked(ADDED)) >= 20, timeout=180, interval=0.5
        )
        print(f"the producer's first 20 sends to {ADDED} acknowledged {seconds:.0f} s after it was writable")
        pinned = {q.broker_name for q in asyncio.run(_route(name_servers, PINNED)).queue_datas}
        assert pinned == {group.name}, f"{PINNED} is placed on {group.name} by name, yet routed to {sorted(pinned)}"

        # 2. Drained by `kubectl rocketmq drain-group` (spec.draining, the observer's pass) while its readers are
        #    paused: write permission off in the name servers' routes, status.drain with the lag; then deleted with
        #    messages its readers have not read: held, saying why.
        readers.paused.set()
        before = len(producer.acked(ADDED))
        node.wait_for(
            f"sends to {ADDED} unread", lambda: len(producer.acked(ADDED)) > before + 10, timeout=180, interval=0.5
        )
        drain = _plugin(node, ns, "drain-group", ADDED)
        assert drain.returncode == 0 and "draining" in drain.stdout, drain.stdout + drain.stderr

        def read_only_in_routes() -> bool:
            route = asyncio.run(_route(name_servers))
            perms = [q.perm for q in route.queue_datas if q.broker_name == ADDED]
            return bool(perms) and not any(p & PERM_WRITE for p in perms)

        node.wait_for(f"{ADDED} read-only in the routes", read_only_in_routes, timeout=120)

        def draining_with_lag() -> bool:
            drain = (added().get("status") or {}).get("drain") or {}
            return int(drain.get("lagTotal") or 0) > 0 and drain.get("drained") is False

        node.wait_for(f"{ADDED}'s status.drain with its unread messages", draining_with_lag, timeout=120)
        shown = _plugin(node, ns, "status", ADDED)
        assert "drain:" in shown.stdout, shown.stdout + shown.stderr
        node.kubectl("-n", ns, "delete", "bg", ADDED, "--wait=false")

        def held() -> bool:
            drain = (added().get("status") or {}).get("drain") or {}
            return "removal waits" in str(drain.get("message")) and int(drain.get("lagTotal") or 0) > 0

        node.wait_for(f"{ADDED}'s deletion held for its unread messages", held, timeout=180)
        doc = added()
        assert doc["metadata"].get("deletionTimestamp"), doc["metadata"]
        drained = next(c for c in doc["status"]["conditions"] if c["type"] == "Drained")
        assert drained["status"] == "False" and "fix:" in drained["message"], drained
        print(f"held: {drained['message']}")

        # 3. Read: the deletion goes through, and the pods with it.
        readers.paused.clear()
        seconds = node.wait_for(f"{ADDED} deleted", lambda: not added(), timeout=300, detail=readers.describe)
        print(f"{ADDED} deleted {seconds:.0f} s after its readers went on")
        node.wait_for(
            f"{ADDED}'s pods gone",
            lambda: not node.json("-n", ns, "get", "pods", "-l", f"rocketmq-operator.dev/group={ADDED}")["items"],
            timeout=300,
        )

        # 4. Forced: SECOND deleted with messages nobody has read, held; the force-delete annotation lets it go,
        #    and a Warning Event says what was dropped.
        readers.paused.set()
        before = len(producer.acked(SECOND))
        node.wait_for(
            f"sends to {SECOND} unread", lambda: len(producer.acked(SECOND)) > before + 10, timeout=180, interval=0.5
        )
        node.kubectl("-n", ns, "delete", "bg", SECOND, "--wait=false")
        node.wait_for(
            f"{SECOND}'s deletion held",
            lambda: "removal waits" in str(((added(SECOND).get("status") or {}).get("drain") or {}).get("message")),
            timeout=180,
        )
        node.kubectl("-n", ns, "annotate", "bg", SECOND, f"{FORCE_ANNOTATION}=true")
        node.wait_for(f"{SECOND} deleted by force", lambda: not added(SECOND), timeout=300)
        removed = [
            e["message"]
            for e in node.json("-n", ns, "get", "events", "--field-selector", f"involvedObject.name={SECOND}")["items"]
            if e["reason"] == "GroupRemoved"
        ]
        print(f"forced: {removed}")
        assert any("removal forced" in m and "unconsumed messages are dropped" in m for m in removed), removed
        readers.paused.clear()
    finally:
        producer.stop.set()
        producer.thread.join(timeout=60)
        readers.stop.set()
        readers.thread.join(timeout=120)
    asyncio.run(readers.read_once())  # what was sent to the quickstart's group meanwhile
    acked = producer.acked()
    assert producer.acked(ADDED), f"no send was acknowledged by {ADDED}"
    lost = missing_acknowledged(set(acked), readers.keys)
    dropped = set(producer.acked(SECOND))  # the forced removal's: said in its Event; nothing else may be missing
    print(f"{len(acked)} acknowledged ({len(producer.acked(ADDED))} by {ADDED}), {len(lost)} never consumed "
          f"({len(lost & dropped)} dropped with {SECOND})")  # fmt: skip
    assert lost <= dropped, f"{len(lost - dropped)} acknowledged keys never consumed, e.g. {sorted(lost - dropped)[:5]}"
    group.wait_healthy()


BACKUP_ONLY = "backup-only"  # a topic no resource declares: only a backup can bring it back


def _operator_cli(node: Any, *args: str, stdin: str | None = None) -> str:
    """`rocketmq-operator ARGS` in the chart's operator pod (docs/backup.md, "On Kubernetes")."""
    return str(
        node.kubectl(
            "-n", "rocketmq-operator", "exec", "-i", "deploy/rocketmq-operator", "--", "rocketmq-operator", *args,
            input=stdin, timeout=180,
        )
    )  # fmt: skip


def test_metadata_backup_and_restore_from_the_operator_pod(second_quickstart: Any) -> None:
    """`backup` run in the operator's pod, as docs/backup.md says, holds a topic that exists only on the brokers;
    the topic deleted from the master, `restore` from the same document brings it back. Then the same through the
    ControllerGroup's scheduled backups (spec.backup) and `kubectl rocketmq backup`, restored from the Secret."""
    group = second_quickstart
    node, ns = group.node, group.ns
    name_servers = node.json("-n", ns, "get", "configmap", f"{group.controller_group}-connection")["data"][
        "nameServers"
    ]

    async def on(master: str, action: str) -> dict[str, Any]:
        async with RemotingClient(connect_timeout=2.0, request_timeout=5.0) as client:
            admin = TopicAdmin(client)
            if action == "create":
                await admin.create_topic(master, TopicConfigInfo(BACKUP_ONLY, 4, 4))
            elif action == "delete":
                await admin.delete_topic(master, BACKUP_ONLY)
            return {n: t.read_queue_nums for n, t in (await admin.topics(master)).items()}

    def on_master(action: str) -> dict[str, Any]:
        """``action`` on the master of the healthy group, its address read now: the group's broker was restarted
        between two of these steps in the cold run of 2026-12-03 (connection refused at the address read at the
        start). A refused connection is tried once more after the group is healthy again, saying what changed;
        the topic's state is read back from whichever broker is master then, so nothing is assumed."""
        for attempt in (1, 2):
            group.wait_healthy()
            master = str((group.status().get("master") or {}).get("address"))
            try:
                return asyncio.run(on(master, action))
            except RemotingConnectionError as exc:
                restarts = {n: [c.get("restartCount") for c in (p.get("status") or {}).get("containerStatuses") or []]
                            for n, p in group.pods().items()}  # fmt: skip
                print(f"\n{action} on master {master}: {exc}; restarts per pod {restarts}")
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    on_master("create")
    document = _operator_cli(node, "backup", "--namesrv", name_servers, "--to", "-")
    topics = json.loads(document)["groups"][group.name]["topics"]
    assert BACKUP_ONLY in topics and "orders" in topics, sorted(topics)
    assert BACKUP_ONLY not in on_master("delete")
    restored = _operator_cli(node, "restore", "--namesrv", name_servers, "--from", "-", stdin=document)
    print(f"\n{restored.strip()}")
    assert on_master("read").get(BACKUP_ONLY) == 4, restored

    # Scheduled (spec.backup): the first backup when the field is set, another at once through the plugin, each in
    # a Secret of the ring; the topic deleted again comes back from the newest Secret's document.
    ctl = group.controller_group
    node.kubectl("-n", ns, "patch", "controllergroup", ctl, "--type", "merge", "-p",
                 json.dumps({"spec": {"backup": {"every": "24h", "keep": 2}}}))  # fmt: skip

    def kept() -> list[dict[str, Any]]:
        status = node.json("-n", ns, "get", "controllergroup", ctl).get("status") or {}
        return list((status.get("backup") or {}).get("kept") or [])

    node.wait_for("the first scheduled backup", lambda: len(kept()) == 1, timeout=120)
    asked = _plugin(node, ns, "backup", ctl, "--wait", "100")
    print(asked.stdout.strip())
    assert asked.returncode == 0, asked.stdout + asked.stderr
    newest = kept()[0]
    assert [k["secret"] for k in kept()] == [f"{ctl}-metadata-1", f"{ctl}-metadata-0"], kept()
    secret = node.json("-n", ns, "get", "secret", newest["secret"])
    assert not secret["metadata"].get("ownerReferences")  # it outlives the ControllerGroup
    scheduled = base64.b64decode(secret["data"]["metadata.json"]).decode()
    assert BACKUP_ONLY in json.loads(scheduled)["groups"][group.name]["topics"]
    events = [e["reason"] for e in node.json("-n", ns, "get", "events", "--field-selector",
                                             f"involvedObject.name={ctl}")["items"]]  # fmt: skip
    assert events.count("MetadataBackup") >= 2, events
    assert BACKUP_ONLY not in on_master("delete")
    restored = _operator_cli(node, "restore", "--namesrv", name_servers, "--from", "-", stdin=scheduled)
    print(restored.strip())
    assert on_master("read").get(BACKUP_ONLY) == 4, restored
    on_master("delete")
