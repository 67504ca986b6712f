"""Issue 32 item 4 acceptance on real brokers (local platform): `local backup` of a cluster, then `local restore` onto a
fresh cluster, recreates every topic, consumer group, user and ACL, as RocketMQ's own mqadmin lists them.

examples/auth.yaml (ACL 2.0 on; its Proxy left out: nothing here speaks gRPC, and every JVM counts on two cores) is
brought up; topics (NORMAL with 8 queues, FIFO, read-only), consumer groups (one with 3 retries, one orderly) and a
user with an ACL are made on its master through the admin path, signed as the example's admin, as an administrator
would with mqadmin. `local backup` writes the file (mode 0600), the cluster is torn down, a fresh one is brought up
from the same manifest (which already declares some of what the backup holds: those are reported present), and
`local restore` creates the rest (exit 0). Then the pinned distribution's mqadmin, signing as the admin through a
`conf/tools.yml` as RocketMQ's tools read it, lists the topics (`topicList`), a consumer group's config
(`getConsumerConfig`), the users (`listUser`) and the ACLs (`listAcl`); each replica holds the user (every broker
keeps its own store), and the restored user's password signs a send that the brokers acknowledge. A second restore
finds everything present. Two cluster starts in all.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from polling import until

from rocketmq_operator.platforms.local import distribution
from rocketmq_operator.remoting import RemotingClient, RemotingException
from rocketmq_operator.remoting.admin import SubscriptionGroupInfo, TopicAdmin, TopicConfigInfo
from rocketmq_operator.remoting.auth import SessionCredentials
from rocketmq_operator.remoting.auth_admin import AuthAdmin
from rocketmq_operator.tools.produce import produce

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
AUTH = ROOT / "examples" / "auth.yaml"
GROUP = "broker-a"
CLUSTER = "DefaultCluster"
TOPICS = {
    "bk_orders_v1": TopicConfigInfo("bk_orders_v1", 8, 8, attributes={"message.type": "NORMAL"}),
    "bk_fifo": TopicConfigInfo("bk_fifo", 4, 4, order=True, attributes={"message.type": "FIFO"}),
    "bk_archive": TopicConfigInfo("bk_archive", 2, 2, perm=4, attributes={"message.type": "NORMAL"}),
}
CONSUMER_GROUPS = {
    "bk-readers": SubscriptionGroupInfo("bk-readers", retry_max_times=3),
    "bk-orderly": SubscriptionGroupInfo("bk-orderly", consume_message_orderly=True),
}
USER = SessionCredentials("bk-user", "bk-user-password")
USER_ACL = {
    "subject": f"User:{USER.access_key}",
    "policies": [
        {
            "policyType": "Custom",
            "entries": [
                {"resource": "Topic:bk_orders_v1", "actions": ["Pub", "Sub"], "sourceIps": [], "decision": "Allow"},
                {"resource": "Group:bk-readers", "actions": ["Sub"], "sourceIps": [], "decision": "Allow"},
            ],
        }
    ],
}


def _admin() -> SessionCredentials:
    docs = [d for d in yaml.safe_load_all(AUTH.read_text(encoding="utf-8")) if d and d.get("kind") == "Secret"]
    admin = next(d for d in docs if d["metadata"]["name"] == "rocketmq-admin")["stringData"]
    return SessionCredentials(admin["username"], admin["password"])


ADMIN = _admin()


def _without_proxy(tmp_path: Path) -> Path:
    docs = [d for d in AUTH.read_text(encoding="utf-8").split("\n---\n") if "\nkind: Proxy\n" not in f"\n{d}"]
    path = tmp_path / "auth-no-proxy.yaml"
    path.write_text("\n---\n".join(docs), encoding="utf-8")
    return path


def _serving(cluster: Any, doc: dict[str, Any]) -> bool:
    g = cluster.group(GROUP, doc)
    return bool((g.get("master") or {}).get("address")) and g.get("writable") is True


async def _cluster_addrs(namesrv: str) -> tuple[str, list[str]]:
    """(the group's master, every replica's address) as the name servers know them."""
    async with RemotingClient(namesrv, credentials=ADMIN, request_timeout=10.0) as client:
        data = (await client.get_cluster_info()).broker_addr_table[GROUP]
    master = data.master_addr
    assert master is not None
    return master, [a for _, a in sorted(data.broker_addrs.items())]


async def _make_metadata(namesrv: str) -> None:
    """What an administrator makes by hand on the master: topics, consumer groups, a user and its ACL."""
    master, _ = await _cluster_addrs(namesrv)
    async with RemotingClient(namesrv, credentials=ADMIN, request_timeout=10.0) as client:
        topics = TopicAdmin(client)
        for config in TOPICS.values():
            await topics.create_topic(master, config)
        for group in CONSUMER_GROUPS.values():
            await topics.create_subscription_group(master, group)
        auth = AuthAdmin(client)
        body = {"username": USER.access_key, "password": USER.secret_key, "userType": "Normal", "userStatus": "enable"}
        await auth.create_user(master, body)
        await auth.create_acl(master, USER_ACL)


async def _users_by_replica(namesrv: str) -> dict[str, set[str]]:
    _, replicas = await _cluster_addrs(namesrv)
    out: dict[str, set[str]] = {}
    async with RemotingClient(namesrv, credentials=ADMIN, request_timeout=10.0) as client:
        for addr in replicas:
            out[addr] = {u["username"] for u in await AuthAdmin(client).list_users(addr)}
    return out


def _mqadmin(tools_home: Path, *args: str) -> str:
    """The distribution's mqadmin, signing as the admin: RocketMQ's tools read the credentials from
    `${rocketmq.home.dir}/conf/tools.yml` (MQAdminStartup, AclUtils.getAclRPCHook), so the home is pointed at a
    directory holding only that file (the jars and the logging config are named on the command line)."""
    argv = distribution.java_command("tools", None, args=args)
    argv = [f"-Drocketmq.home.dir={tools_home}" if a.startswith("-Drocketmq.home.dir=") else a for a in argv]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def _asked_until(what: str, tools_home: Path, args: tuple[str, ...], pattern: str) -> str:
    """mqadmin prints nothing when its request timed out (a loaded machine): asked again until the answer holds
    ``pattern``."""

    def answer() -> str | None:
        out = _mqadmin(tools_home, *args)
        return out if re.search(pattern, out) else None

    return until(what, answer, timeout=240)


def test_backup_then_restore_onto_a_fresh_cluster_recreates_everything(local_platform: Any, tmp_path: Path) -> None:
    manifest = _without_proxy(tmp_path)
    backup = tmp_path / "metadata.json"

    with local_platform.up(manifest, name="backup-source") as source:
        doc = source.wait_for("a writable master", lambda d: _serving(source, d), timeout=180)
        namesrv = ";".join(doc["nameServers"])
        # The operator creates the declared users once the brokers answer; the admin path signs as their admin.
        until("the declared users on every replica", lambda: _declared_everywhere(namesrv))
        asyncio.run(_make_metadata(namesrv))
        proc = source.cli("backup", "--to", str(backup))
        assert "mode 0600" in proc.stderr, proc.stderr

    assert stat.S_IMODE(os.stat(backup).st_mode) == 0o600
    document = json.loads(backup.read_text(encoding="utf-8"))
    held = document["groups"][GROUP]
    assert set(TOPICS) | {"orders"} <= set(held["topics"]), sorted(held["topics"])
    assert not any(t.startswith(("rmq_sys_", "%RETRY%")) or t == "TBW102" for t in held["topics"])
    assert held["topics"]["bk_orders_v1"]["readQueueNums"] == 8 and held["topics"]["bk_archive"]["perm"] == 4
    assert set(CONSUMER_GROUPS) | {"orders-readers"} == set(held["subscriptionGroups"])
    assert {u["username"] for u in held["users"]} == {
        USER.access_key,
        "orders-app",
        "orders-publisher",
        ADMIN.access_key,
    }
    assert f"User:{USER.access_key}" in {a["subject"] for a in held["acls"]}

    with local_platform.up(manifest, name="backup-target") as target:
        doc = target.wait_for("a writable master", lambda d: _serving(target, d), timeout=180)
        namesrv = ";".join(doc["nameServers"])
        # The target's operator creates its declared users and ACLs on every replica once its brokers answer: the
        # restore waits for that (the two creating the same user at once would refuse one of them), and signs as the
        # admin.
        until("the declared users and ACLs on every replica", lambda: _declared_everywhere(namesrv))
        proc = target.cli("restore", "--from", str(backup), check=False, timeout=300)
        assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}\n{target.log_tails()}"
        out = proc.stdout
        print(f"local restore:\n{out}")  # pytest -s: what a user sees (docs/backup.md quotes it)
        for topic in TOPICS:
            assert re.search(rf"(?m)^topic {topic} on {GROUP} \([^)]+\): created", out), out
        for group in CONSUMER_GROUPS:
            assert re.search(rf"(?m)^subscription group {group} on {GROUP} \([^)]+\): created", out), out
        assert len(re.findall(rf"user {USER.access_key} on {GROUP} \([^)]+\): created", out)) == 3, out  # 3 replicas
        assert "topic orders on" not in out  # declared by the manifest on the target too: present, not listed
        assert "bk-user-password" not in out + proc.stderr

        tools_home = tmp_path / "tools-home"
        (tools_home / "conf").mkdir(parents=True)
        (tools_home / "conf" / "tools.yml").write_text(
            f"accessKey: {ADMIN.access_key}\nsecretKey: {ADMIN.secret_key}\n", encoding="utf-8"
        )
        ns = doc["nameServers"][0]
        topics = _asked_until("mqadmin topicList", tools_home, ("topicList", "-n", ns), r"(?m)^bk_orders_v1$")
        listed = set(topics.split())
        assert set(TOPICS) <= listed, topics
        config = _asked_until(
            "mqadmin getConsumerConfig",
            tools_home,
            ("getConsumerConfig", "-n", ns, "-g", "bk-readers"),
            "retryMaxTimes",
        )
        assert re.search(r"retryMaxTimes\s+=\s+3\b", config), config
        orderly = _asked_until(
            "mqadmin getConsumerConfig", tools_home, ("getConsumerConfig", "-n", ns, "-g", "bk-orderly"), "groupName"
        )
        assert re.search(r"consumeMessageOrderly\s+=\s+true\b", orderly), orderly
        users = _asked_until("mqadmin listUser", tools_home, ("listUser", "-n", ns, "-c", CLUSTER), USER.access_key)
        assert re.search(rf"(?m)^{USER.access_key}\s+{USER.secret_key}\s+Normal\s+enable", users), users
        acls = _asked_until("mqadmin listAcl", tools_home, ("listAcl", "-n", ns, "-c", CLUSTER), USER.access_key)
        assert re.search(rf"User:{USER.access_key}\s+Custom\s+Topic:bk_orders_v1\s+\[(Pub, Sub|Sub, Pub)\]", acls), acls

        by_replica = asyncio.run(_users_by_replica(namesrv))
        assert len(by_replica) == 3 and all(USER.access_key in names for names in by_replica.values()), by_replica
        sent = asyncio.run(produce(namesrv, "bk_orders_v1", 5, create_topic=False, retries=2, credentials=USER))
        assert sent.acknowledged == 5, (sent.statuses, sent.failures)  # the restored password signs

        again = target.cli("restore", "--from", str(backup), timeout=300)
        summary = again.stdout.splitlines()[-1]
        assert re.search(r": 0 created, \d+ already present, 0 different \(kept\), 0 overwritten, 0 not", summary), (
            again.stdout
        )


DECLARED_USERS = {"orders-app", "orders-publisher", ADMIN.access_key}
DECLARED_ACLS = {"User:orders-app", "User:orders-publisher"}


def _declared_everywhere(namesrv: str) -> bool:
    """Every replica holds the manifest's users and their ACLs (what the local operator asserts after a start)."""

    async def check() -> bool:
        _, replicas = await _cluster_addrs(namesrv)
        async with RemotingClient(namesrv, credentials=ADMIN, request_timeout=10.0) as client:
            auth = AuthAdmin(client)
            for addr in replicas:
                users = {u["username"] for u in await auth.list_users(addr)}
                acls = {a["subject"] for a in await auth.list_acls(addr)}
                if not (users >= DECLARED_USERS and acls >= DECLARED_ACLS):
                    return False
        return len(replicas) == 3

    try:
        return asyncio.run(check())
    except (RemotingException, OSError, KeyError, AssertionError):
        return False  # not every broker registered, or the admin not created yet
