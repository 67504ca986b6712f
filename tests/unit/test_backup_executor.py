"""control.backup and the `backup` / `restore` commands against fake clusters: a backup of one cluster restored onto a
fresh one, again (everything present), with a refused write, onto every group, and every bad input as one line."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from rocketmq_operator.cli import backup as backup_cli
from rocketmq_operator.cli.main import main
from rocketmq_operator.control.backup import restore, take_backup
from rocketmq_operator.core.backup import BackupError, Outcome, load_backup
from rocketmq_operator.remoting import BrokerData, ClusterInfo, RemotingCommand, RemotingConnectionError

STORE = {"authenticationMetadataProvider": "org.apache.rocketmq.auth...LocalAuthenticationMetadataProvider"}
SYSTEM_TOPIC = {"readQueueNums": 1, "writeQueueNums": 1, "perm": 6, "attributes": {}}


class FakeCluster:
    """Name servers and brokers in memory: cluster info, topic and group tables per broker, users and ACLs per
    broker (each keeps its own, as RocketMQ's local store does)."""

    def __init__(self, groups: dict[str, list[str]], *, auth: bool = True, cluster: str = "DefaultCluster") -> None:
        self.namesrv_addrs = ("ns:9876",)
        self.cluster = cluster
        self.groups = groups  # group -> addresses, the master first
        addrs = [a for g in groups.values() for a in g]
        self.topics: dict[str, dict[str, Any]] = {a: {"TBW102": dict(SYSTEM_TOPIC)} for a in addrs}
        self.subscriptions: dict[str, dict[str, Any]] = {
            a: {"TOOLS_CONSUMER": {"groupName": "TOOLS_CONSUMER"}} for a in addrs
        }
        self.users: dict[str, dict[str, dict[str, Any]]] = {a: {} for a in addrs}
        self.acls: dict[str, dict[str, dict[str, Any]]] = {a: {} for a in addrs}
        self.auth = auth
        self.refuse: set[tuple[str, int]] = set()  # (address, request code) answered with an error
        self.down: set[str] = set()
        self.writes: list[tuple[str, int]] = []

    async def __aenter__(self) -> FakeCluster:
        return self

    async def __aexit__(self, *_: object) -> None:
        return None

    async def get_cluster_info(self, **_: object) -> ClusterInfo:
        brokers = {
            g: BrokerData(self.cluster, g, dict(enumerate(addrs)))  # id 0: the master
            for g, addrs in self.groups.items()
        }
        return ClusterInfo(brokers, {self.cluster: tuple(sorted(self.groups))})

    async def get_broker_config(self, addr: str, **_: object) -> dict[str, str]:
        if addr in self.down:
            raise RemotingConnectionError(f"connect to {addr} refused")
        return dict(STORE) if self.auth else {}

    async def _call(
        self, addr: str, code: int, ext_fields: dict[str, str] | None = None, body: bytes = b"", **_: object
    ) -> RemotingCommand:
        if addr in self.down:
            raise RemotingConnectionError(f"connect to {addr} refused")
        if (addr, int(code)) in self.refuse:
            from rocketmq_operator.remoting import RemotingError

            raise RemotingError(1, "refused by the test", addr=addr, request=str(code))
        f = ext_fields or {}
        answer: Any = None
        if code == 21:
            answer = {"topicConfigTable": self.topics[addr]}
        elif code == 201:
            answer = {"subscriptionGroupTable": self.subscriptions[addr]}
        elif code == 3005:
            answer = list(self.users[addr].values()) or None
        elif code == 3010:
            answer = list(self.acls[addr].values()) or None
        else:
            self.writes.append((addr, int(code)))
        if code == 17:
            attrs = dict(kv[1:].split("=", 1) for kv in f.get("attributes", "").split(",") if kv.startswith("+"))
            self.topics[addr][f["topic"]] = {
                "readQueueNums": int(f["readQueueNums"]),
                "writeQueueNums": int(f["writeQueueNums"]),
                "perm": int(f["perm"]),
                "order": f["order"] == "true",
                "topicFilterType": f["topicFilterType"],
                "topicSysFlag": int(f["topicSysFlag"]),
                "attributes": attrs,
            }
        elif code == 200:
            config = json.loads(body)
            self.subscriptions[addr][config["groupName"]] = config
        elif code in (3001, 3002):
            self.users[addr][f["username"]] = json.loads(body)
        elif code in (3006, 3007):
            acl = json.loads(body)
            old = self.acls[addr].get(acl["subject"])
            if old is not None:  # UPDATE_ACL merges entries by resource, as RocketMQ does
                entries = {e["resource"]: e for p in old["policies"] for e in p["entries"]}
                entries.update({e["resource"]: e for p in acl["policies"] for e in p["entries"]})
                acl = {
                    "subject": acl["subject"],
                    "policies": [{"policyType": "Custom", "entries": list(entries.values())}],
                }
            self.acls[addr][acl["subject"]] = acl
        body_out = b"" if answer is None else json.dumps(answer).encode()
        return RemotingCommand(code=0, body=body_out)


def _source() -> FakeCluster:
    cluster = FakeCluster({"broker-a": ["a0:1", "a1:1"], "broker-b": ["b0:1", "b1:1"]})
    for addr in ("a0:1", "b0:1"):
        cluster.topics[addr]["orders"] = {
            "readQueueNums": 8,
            "writeQueueNums": 8,
            "perm": 6,
            "attributes": {"message.type": "NORMAL"},
        }
        cluster.subscriptions[addr]["readers"] = {"groupName": "readers", "retryMaxTimes": 3, "consumeEnable": True}
        cluster.users[addr]["app"] = {
            "username": "app",
            "password": "pw-app",
            "userType": "Normal",
            "userStatus": "enable",
        }
        cluster.acls[addr]["User:app"] = {
            "subject": "User:app",
            "policies": [
                {
                    "policyType": "Custom",
                    "entries": [{"resource": "Topic:orders", "actions": ["Pub"], "decision": "Allow"}],
                }
            ],
        }
    cluster.topics["b0:1"]["only_b"] = {
        "readQueueNums": 2,
        "writeQueueNums": 2,
        "perm": 6,
        "order": True,
        "attributes": {"message.type": "FIFO"},
    }
    return cluster


async def test_backup_then_restore_onto_a_fresh_cluster_then_again() -> None:
    backup = await take_backup(_source(), cluster=None, taken_at="t", tool="test")  # type: ignore[arg-type]
    assert sorted(backup.groups["broker-b"].topics) == ["only_b", "orders"]
    assert list(backup.groups["broker-a"].subscription_groups) == ["readers"]
    fresh = FakeCluster({"broker-a": ["x0:1", "x1:1"], "broker-b": ["y0:1", "y1:1"]})
    report = await restore(fresh, backup, cluster=None, every_group=False, overwrite=False)  # type: ignore[arg-type]
    assert report.ok, (report.errors, [s.line() for s in report.missing])
    assert fresh.topics["y0:1"]["only_b"]["order"] is True and "only_b" not in fresh.topics["x0:1"]
    assert fresh.topics["x0:1"]["orders"]["attributes"] == {"message.type": "NORMAL"}
    assert fresh.subscriptions["x0:1"]["readers"]["retryMaxTimes"] == 3
    assert "orders" not in fresh.topics["x1:1"]  # topics on the master only (its slaves copy them)
    for addr in ("x0:1", "x1:1", "y0:1", "y1:1"):  # users and ACLs on every replica
        assert fresh.users[addr]["app"]["password"] == "pw-app" and "User:app" in fresh.acls[addr]
    again = await restore(fresh, backup, cluster=None, every_group=False, overwrite=False)  # type: ignore[arg-type]
    assert again.ok and {s.outcome for s in again.steps} == {Outcome.PRESENT}


async def test_a_refused_write_is_one_line_and_the_item_is_reported_missing() -> None:
    backup = await take_backup(_source(), cluster=None, taken_at="t", tool="test")  # type: ignore[arg-type]
    fresh = FakeCluster({"broker-a": ["x0:1"], "broker-b": ["y0:1"]})
    fresh.refuse.add(("y0:1", 17))
    report = await restore(fresh, backup, cluster=None, every_group=False, overwrite=False)  # type: ignore[arg-type]
    assert not report.ok
    assert len(report.errors) == 2 and all(e.startswith("topic ") and "refused by the test" in e for e in report.errors)
    assert sorted(s.name for s in report.missing) == ["only_b", "orders"]


async def test_onto_every_group_of_a_cluster_with_other_names() -> None:
    backup = await take_backup(_source(), cluster=None, taken_at="t", tool="test")  # type: ignore[arg-type]
    other = FakeCluster({"broker-x": ["x0:1"]}, cluster="Other")
    with pytest.raises(BackupError, match="cluster: 'DefaultCluster' of the backup"):
        await restore(other, backup, cluster=None, every_group=True, overwrite=False)  # type: ignore[arg-type]
    with pytest.raises(BackupError, match=r"groups\.broker-a: 'broker-a' of the backup"):
        await restore(other, backup, cluster="Other", every_group=False, overwrite=False)  # type: ignore[arg-type]
    report = await restore(other, backup, cluster="Other", every_group=True, overwrite=False)  # type: ignore[arg-type]
    assert report.ok and sorted(t for t in other.topics["x0:1"] if t != "TBW102") == ["only_b", "orders"]


async def test_a_group_without_a_master_fails_the_backup_whole() -> None:
    source = _source()
    source.down.add("b0:1")
    with pytest.raises(BackupError, match=r"broker-b: reading its master b0:1 failed: connect to b0:1 refused"):
        await take_backup(source, cluster=None, taken_at="t", tool="test")  # type: ignore[arg-type]


async def test_an_auth_off_cluster_is_backed_up_without_users_and_refuses_them_on_restore() -> None:
    source = _source()
    source.auth = False
    backup = await take_backup(source, cluster=None, taken_at="t", tool="test")  # type: ignore[arg-type]
    assert backup.groups["broker-a"].users is None
    with_users = await take_backup(_source(), cluster=None, taken_at="t", tool="test")  # type: ignore[arg-type]
    target = FakeCluster({"broker-a": ["x0:1"], "broker-b": ["y0:1"]}, auth=False)
    report = await restore(target, with_users, cluster=None, every_group=False, overwrite=False)  # type: ignore[arg-type]
    assert not report.ok and {s.outcome for s in report.missing} == {Outcome.REFUSED}
    assert sorted(t for t in target.topics["y0:1"] if t != "TBW102") == ["only_b", "orders"]  # the rest restored


# The commands --------------------------------------------------------------------------------------------------


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_backup_writes_a_0600_file_and_restore_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(backup_cli, "_client", lambda _args: _source())
    previous = os.umask(0o022)  # a usual umask: the file is 0600 all the same
    try:
        path = tmp_path / "meta.json"
        code, _, err = _run(["backup", "--namesrv", "ns:9876", "--to", str(path)], capsys)
    finally:
        os.umask(previous)
    assert code == 0, err
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert "mode 0600: it holds the users' passwords" in err and "pw-app" not in err
    assert load_backup(json.loads(path.read_text()), str(path)).cluster == "DefaultCluster"
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left beside it

    fresh = FakeCluster({"broker-a": ["x0:1"], "broker-b": ["y0:1"]})
    monkeypatch.setattr(backup_cli, "_client", lambda _args: fresh)
    code, out, err = _run(["restore", "--namesrv", "ns:9876", "--from", str(path)], capsys)
    assert code == 0, err
    assert "topic only_b on broker-b (y0:1): created: 2/2 queues, perm 6, FIFO" in out
    assert out.splitlines()[-1].startswith("restored onto cluster DefaultCluster: ")
    assert "pw-app" not in out + err
    code, out, _ = _run(["restore", "--namesrv", "ns:9876", "--from", str(path), "--dry-run"], capsys)
    assert code == 0 and out.splitlines() == [out.splitlines()[-1]]  # everything present: only the summary


def test_restore_exits_1_when_something_could_not_be_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(backup_cli, "_client", lambda _args: _source())
    path = tmp_path / "meta.json"
    assert _run(["backup", "--to", str(path)], capsys)[0] == 0
    fresh = FakeCluster({"broker-a": ["x0:1"], "broker-b": ["y0:1"]})
    fresh.refuse.add(("x0:1", 3001))
    monkeypatch.setattr(backup_cli, "_client", lambda _args: fresh)
    code, out, err = _run(["restore", "--from", str(path)], capsys)
    assert code == 1
    assert "failed: user app on broker-a (x0:1): not written: " in out
    assert "still missing after the restore: user app on broker-a (x0:1): not there" in out
    assert err.startswith("error: not everything of the backup is on cluster DefaultCluster") and err.count("\n") == 1


def _write(path: Path, data: Any) -> str:
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return str(path)


def _good() -> dict[str, Any]:
    return {"kind": "RocketMQMetadataBackup", "formatVersion": 1, "cluster": "DefaultCluster", "groups": {}}


BAD_INPUT = [
    ("missing file", None, ["--from ", "cannot be read (No such file or directory)", "rule:", "fix:"]),
    ("not JSON", "{oops", ["not JSON (line 1 column 2", "rule:", "fix:"]),
    ("another format version", {**_good(), "formatVersion": 9}, ["formatVersion: 9 is not a version", "fix:"]),
    ("a group the target lacks", {**_good(), "groups": {"broker-z": {}}},
     ["groups.broker-z: 'broker-z' of the backup is not a broker group", "--onto-every-group"]),
]  # fmt: skip


@pytest.mark.parametrize(("data", "needles"), [c[1:] for c in BAD_INPUT], ids=[c[0] for c in BAD_INPUT])
def test_bad_input_is_one_error_line_and_exit_2(
    data: Any, needles: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(backup_cli, "_client", lambda _args: FakeCluster({"broker-a": ["x0:1"]}))
    path = str(tmp_path / "missing.json") if data is None else _write(tmp_path / "b.json", data)
    code, out, err = _run(["restore", "--from", path], capsys)
    assert code == 2 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
    assert all(n in err for n in needles), err


def test_no_name_server_is_one_line_exit_2(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("NAMESRV_ADDR", raising=False)
    code, _, err = _run(["backup", "--to", "/tmp/never-written.json"], capsys)
    assert code == 2 and err.startswith("error: --namesrv is not given and $NAMESRV_ADDR is empty; rule:")


def test_backup_into_a_missing_directory_is_refused_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(backup_cli, "_client", lambda _args: _source())
    code, _, err = _run(["backup", "--to", str(tmp_path / "no" / "b.json")], capsys)
    assert code == 2 and "the directory" in err and "does not exist" in err and "fix: create it" in err


def test_a_cluster_that_cannot_be_read_whole_writes_nothing_exit_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _source()
    source.down.add("a0:1")
    monkeypatch.setattr(backup_cli, "_client", lambda _args: source)
    path = tmp_path / "b.json"
    code, _, err = _run(["backup", "--to", str(path)], capsys)
    assert code == 1 and err.rstrip().endswith("nothing was written") and not path.exists()


def test_local_backup_and_restore_exit_3_when_nothing_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(["local", "backup", "--to", str(tmp_path / "b.json"), "--state-dir", str(tmp_path)], capsys)
    assert code == 3 and "none was started there" in err and "fix: `rocketmq-operator local up" in err
    path = _write(tmp_path / "b.json", _good())
    code, _, err = _run(["local", "restore", "--from", path, "--state-dir", str(tmp_path)], capsys)
    assert code == 3
