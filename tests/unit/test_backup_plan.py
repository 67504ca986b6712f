"""core.backup: the metadata document built from plain observations, read back with its refusals, placed onto a
target's groups and planned against what the target holds (tables, refusals included)."""

from __future__ import annotations

from typing import Any

import pytest

from rocketmq_operator.core.backup import (
    FORMAT_VERSION,
    AclDoc,
    AclEntryDoc,
    AclPolicy,
    BackupError,
    BackupInputError,
    BackupSource,
    GroupObservation,
    MetadataBackup,
    Outcome,
    ReplicaAuth,
    RestoreStep,
    StepKind,
    TargetGroup,
    TopicEntry,
    UserEntry,
    acl_from_broker,
    build_backup,
    choose_cluster,
    describe_backup,
    has_user_store,
    load_backup,
    placements,
    plan_restore,
    restore_failed,
    summary,
    user_from_broker,
)

SOURCE = BackupSource(name_servers=["10.0.0.1:9876"], taken_at="2026-11-29T10:00:00+00:00", tool="rocketmq-operator t")
ORDERS = TopicEntry(read_queue_nums=8, write_queue_nums=8, attributes={"message.type": "NORMAL"})
FIFO = TopicEntry(read_queue_nums=4, write_queue_nums=4, order=True, attributes={"message.type": "FIFO"})
READERS = {"groupName": "readers", "consumeEnable": True, "retryMaxTimes": 16, "brokerId": 0}
APP = UserEntry(username="app", password="s3cret-app", user_type="Normal", user_status="enable")
ADMIN = UserEntry(username="admin", password="s3cret-admin", user_type="Super", user_status="enable")
PUB = AclEntryDoc(resource="Topic:orders", actions=["Pub"])
SUB = AclEntryDoc(resource="Group:readers", actions=["Get", "Sub"])
APP_ACL = AclDoc(subject="User:app", policies=[AclPolicy(entries=[PUB, SUB])])
PASSWORDS = ("s3cret-app", "s3cret-admin")


def _observation(group: str = "broker-a", **changes: Any) -> GroupObservation:
    values: dict[str, Any] = {
        "group": group,
        "master": f"{group}:10911",
        "topics": {"orders": ORDERS, "fifo_orders": FIFO},
        "subscription_groups": {"readers": READERS},
        "users": [APP, ADMIN],
        "acls": [APP_ACL],
    }
    values.update(changes)
    return GroupObservation(**values)


def _backup(*observations: GroupObservation) -> MetadataBackup:
    return build_backup("DefaultCluster", SOURCE, list(observations) or [_observation()])


# Building ------------------------------------------------------------------------------------------------------

SYSTEM_TOPICS = [
    "TBW102", "SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC", "rmq_sys_wheel_timer", "%RETRY%readers",
    "%DLQ%readers", "broker-a", "broker-b", "DefaultCluster", "DefaultCluster_REPLY_TOPIC",
    "DefaultHeartBeatSyncerTopic", "BenchmarkTest", "OFFSET_MOVED_EVENT", "SELF_TEST_TOPIC",
]  # fmt: skip
SYSTEM_GROUPS = ["TOOLS_CONSUMER", "CID_RMQ_SYS_TRANS", "CID_ONSAPI_PULL", "SELF_TEST_C_GROUP", "CID_RMQ_SYS_other"]


def test_build_keeps_user_topics_and_groups_per_group_and_leaves_rocketmqs_own_out() -> None:
    topics = {**{n: TopicEntry(read_queue_nums=1, write_queue_nums=1) for n in SYSTEM_TOPICS}, "orders": ORDERS}
    groups = {**{n: {"groupName": n} for n in SYSTEM_GROUPS}, "readers": READERS}
    a = _observation("broker-a", topics=topics, subscription_groups=groups)
    b = _observation("broker-b", topics={"orders": ORDERS, "only_b": FIFO}, users=None, acls=None)
    backup = build_backup("DefaultCluster", SOURCE, [b, a])
    assert list(backup.groups) == ["broker-a", "broker-b"]
    assert list(backup.groups["broker-a"].topics) == ["orders"]
    assert list(backup.groups["broker-a"].subscription_groups) == ["readers"]
    assert sorted(backup.groups["broker-b"].topics) == ["only_b", "orders"]  # the placement: which group had what
    assert [u.username for u in backup.groups["broker-a"].users or []] == ["admin", "app"]
    assert backup.groups["broker-b"].users is None and backup.groups["broker-b"].acls is None
    assert backup.groups["broker-a"].master == "broker-a:10911"


def test_the_document_is_versioned_camel_case_json_and_reads_back_equal() -> None:
    backup = _backup()
    doc = backup.to_json()
    assert doc["kind"] == "RocketMQMetadataBackup" and doc["formatVersion"] == FORMAT_VERSION
    assert doc["cluster"] == "DefaultCluster" and doc["source"]["nameServers"] == ["10.0.0.1:9876"]
    topic = doc["groups"]["broker-a"]["topics"]["orders"]
    assert (topic["readQueueNums"], topic["writeQueueNums"], topic["perm"]) == (8, 8, 6)
    assert doc["groups"]["broker-a"]["subscriptionGroups"]["readers"] == READERS
    assert doc["groups"]["broker-a"]["users"][1]["password"] == "s3cret-app"  # the secret a restore needs
    assert load_backup(doc, "f.json") == backup


def test_describe_names_counts_never_passwords() -> None:
    lines = describe_backup(_backup(_observation(), _observation("broker-b", users=None, acls=None)))
    assert lines[0].startswith("broker-a: 2 topic(s), 1 subscription group(s), 2 user(s), 1 ACL(s)")
    assert "no user store (auth off)" in lines[1]
    assert not any(p in line for line in lines for p in PASSWORDS)


def test_broker_answers_with_null_lists_and_missing_fields_are_read_with_rocketmqs_defaults() -> None:
    acl = acl_from_broker({"subject": "User:x", "policies": [{"entries": [{"resource": "Topic:t", "actions": None}]}]})
    assert acl.policies[0].policy_type == "Custom" and acl.policies[0].entries[0].actions == []
    assert acl.policies[0].entries[0].decision == "Allow"
    user = user_from_broker({"username": "x", "password": "p"})
    assert (user.user_type, user.user_status) == ("Normal", "enable")
    assert "very-secret" not in repr(UserEntry(username="u", password="very-secret"))


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"authenticationMetadataProvider": "org.apache...LocalAuthenticationMetadataProvider"}, True),
        ({"authenticationMetadataProvider": ""}, False),
        ({}, False),
    ],
)
def test_a_broker_keeps_users_only_with_a_metadata_provider(config: dict[str, str], expected: bool) -> None:
    assert has_user_store(config) is expected


# Reading back: refusals ----------------------------------------------------------------------------------------


def _doc(**changes: Any) -> Any:
    doc = _backup().to_json()
    doc.update(changes)
    return doc


def _bad_password() -> Any:
    doc = _backup().to_json()
    doc["groups"]["broker-a"]["users"][0]["password"] = 12345
    return doc


def _bad_topic(name: str, **fields: Any) -> Any:
    doc = _backup().to_json()
    doc["groups"]["broker-a"]["topics"][name] = {"readQueueNums": 1, "writeQueueNums": 1, **fields}
    return doc


REFUSALS = [
    ("not an object", [1, 2], ["the document is a JSON list", "rule:", "fix:"]),
    ("another kind", _doc(kind="Something"), ["kind: 'Something'", "is not 'RocketMQMetadataBackup'", "rule:"]),
    ("another format version", _doc(formatVersion=2),
     ["formatVersion: 2 is not a version", "reads formatVersion 1", "fix:", "source.tool: rocketmq-operator t"]),
    ("no format version", {k: v for k, v in _doc().items() if k != "formatVersion"}, ["formatVersion: None"]),
    ("no cluster", {k: v for k, v in _doc().items() if k != "cluster"}, ["cluster: Field required", "fix:"]),
    ("a typo", _doc(clusterr="x"), ["clusterr: Extra inputs are not permitted"]),
    ("negative queues", _bad_topic("t", readQueueNums=-1),
     ["groups.broker-a.topics.t.readQueueNums", "greater than or equal to 0", "(value -1)"]),
    ("a topic name RocketMQ refuses", _bad_topic("bad name"), ["groups.broker-a.topics", "'bad name'", "topic name"]),
    ("a password of the wrong type: its value never shown", _bad_password(),
     ["groups.broker-a.users[0].password", "valid string"]),
]  # fmt: skip


@pytest.mark.parametrize(("data", "needles"), [c[1:] for c in REFUSALS], ids=[c[0] for c in REFUSALS])
def test_load_refuses_with_one_line_naming_field_value_rule_and_fix(data: Any, needles: list[str]) -> None:
    with pytest.raises(BackupInputError) as caught:
        load_backup(data, "--from b.json")
    text = str(caught.value)
    assert "\n" not in text and text.startswith("--from b.json: ")
    assert "rule:" in text and "fix:" in text
    for needle in needles:
        assert needle in text, text
    assert "12345" not in text and not any(p in text for p in PASSWORDS)


CLUSTERS = [
    ("the only one", {"c1": ["a"]}, None, None, "c1"),
    ("named", {"c1": ["a"], "c2": ["b"]}, "c2", None, "c2"),
    ("the backup's, by default", {"c1": ["a"], "c2": ["b"]}, None, "c2", "c2"),
    ("named beats the backup's", {"c1": ["a"], "c2": ["b"]}, "c1", "c2", "c1"),
]  # fmt: skip


@pytest.mark.parametrize(("clusters", "wanted", "fallback", "chosen"), [c[1:] for c in CLUSTERS],
                         ids=[c[0] for c in CLUSTERS])  # fmt: skip
def test_choose_cluster(clusters: dict[str, list[str]], wanted: str | None, fallback: str | None, chosen: str) -> None:
    assert choose_cluster(clusters, wanted, "--cluster", fallback) == chosen


CLUSTER_REFUSALS = [
    ("none registered", {}, None, None, BackupError, ["no broker registered", "fix: check --namesrv"]),
    ("unknown name", {"c1": ["a"]}, "c9", None, BackupInputError, ["--cluster c9: not a cluster", "they know: c1"]),
    ("several, none named", {"c1": ["a"], "c2": ["b"]}, None, None, BackupInputError,
     ["several clusters (c1, c2)", "fix: pass --cluster NAME"]),
    ("the backup's cluster is not the target's", {"other": ["a"]}, None, "DefaultCluster", BackupInputError,
     ["cluster: 'DefaultCluster' of the backup", "(it has: other)", "fix: pass --cluster NAME"]),
]  # fmt: skip


@pytest.mark.parametrize(("clusters", "wanted", "fallback", "error", "needles"), [c[1:] for c in CLUSTER_REFUSALS],
                         ids=[c[0] for c in CLUSTER_REFUSALS])  # fmt: skip
def test_choose_cluster_refusals(
    clusters: dict[str, list[str]], wanted: str | None, fallback: str | None, error: type, needles: list[str]
) -> None:
    with pytest.raises(error) as caught:
        choose_cluster(clusters, wanted, "--cluster", fallback)
    assert "rule:" in str(caught.value) and all(n in str(caught.value) for n in needles), str(caught.value)


# Placement -----------------------------------------------------------------------------------------------------


def test_each_group_goes_back_on_the_group_of_the_same_name() -> None:
    backup = _backup(_observation("broker-a"), _observation("broker-b", topics={"only_b": FIFO}))
    placed = placements(backup, ["broker-a", "broker-b", "broker-c"], False, "DefaultCluster")
    assert sorted(placed.groups) == ["broker-a", "broker-b"]  # broker-c of the target gets nothing
    assert sorted(placed.groups["broker-b"].topics) == ["only_b"] and not placed.conflicts


def test_a_group_the_target_lacks_is_refused_without_the_option() -> None:
    backup = _backup(_observation("broker-a"), _observation("broker-b"))
    with pytest.raises(BackupInputError) as caught:
        placements(backup, ["broker-a", "broker-x"], False, "DefaultCluster")
    text = str(caught.value)
    assert text.startswith("groups.broker-b: 'broker-b' of the backup is not a broker group of cluster DefaultCluster")
    assert "(it has: broker-a, broker-x)" in text and "rule:" in text and "--onto-every-group" in text


def test_an_empty_target_is_refused() -> None:
    with pytest.raises(BackupError, match="no broker group is registered"):
        placements(_backup(), [], True, "DefaultCluster")


def test_onto_every_group_puts_the_union_everywhere_and_refuses_conflicting_definitions() -> None:
    a = _observation("broker-a", topics={"orders": ORDERS, "only_a": FIFO})
    b = _observation(
        "broker-b",
        topics={"orders": TopicEntry(read_queue_nums=4, write_queue_nums=4), "only_b": FIFO},
        users=[UserEntry(username="app", password="other-password"), ADMIN],
    )
    placed = placements(_backup(a, b), ["x", "y"], True, "DefaultCluster")
    assert sorted(placed.groups) == ["x", "y"]
    assert sorted(placed.groups["y"].topics) == ["only_a", "only_b"]  # orders conflicts: on neither
    assert sorted(placed.groups["y"].users or {}) == ["admin"]
    kinds = [(kind, name) for kind, name, _ in placed.conflicts]
    assert kinds == [("topic", "orders"), ("user", "app")]
    topic_line = placed.conflicts[0][2]
    assert "broker-a has 8/8 queues" in topic_line and "broker-b has 4/4 queues" in topic_line
    assert "rule: --onto-every-group puts one definition on every group" in topic_line
    assert not any(p in line or "other-password" in line for _, _, line in placed.conflicts for p in PASSWORDS)
    steps = plan_restore(placed, {}, overwrite=False)
    refused = [s for s in steps if s.group == "every group"]
    assert [(s.kind, s.name, s.outcome) for s in refused] == [
        (StepKind.TOPIC, "orders", Outcome.REFUSED),
        (StepKind.USER, "app", Outcome.REFUSED),
    ]


# Planning ------------------------------------------------------------------------------------------------------


def _target(
    topics: dict[str, TopicEntry] | None = None,
    groups: dict[str, dict[str, Any]] | None = None,
    replicas: dict[str, ReplicaAuth] | None = None,
    master: str | None = "m:1",
    error: str | None = None,
) -> TargetGroup:
    return TargetGroup("broker-a", master, topics, groups, replicas or {}, error)


def _only(kind: StepKind, content: dict[str, Any], target: TargetGroup, overwrite: bool = False) -> list[RestoreStep]:
    obs = _observation(topics={}, subscription_groups={}, users=None, acls=None)
    backup = build_backup("DefaultCluster", SOURCE, [GroupObservation(**{**obs.__dict__, **content})])
    placed = placements(backup, ["broker-a"], False, "DefaultCluster")
    return [s for s in plan_restore(placed, {"broker-a": target}, overwrite) if s.kind is kind]


TOPIC_CASES = [
    ("missing: created", {}, False, Outcome.CREATE, True, "8/8 queues, perm 6, NORMAL"),
    ("equal: present", {"orders": ORDERS}, False, Outcome.PRESENT, False, ""),
    ("no message.type on the target is NORMAL", {"orders": TopicEntry(read_queue_nums=8, write_queue_nums=8)}, False,
     Outcome.PRESENT, False, ""),
    ("different: listed, kept", {"orders": TopicEntry(read_queue_nums=4, write_queue_nums=8, perm=4)}, False,
     Outcome.DIFFERENT, False, "readQueueNums 4 -> 8; perm 4 -> 6"),
    ("different, --overwrite: replaced", {"orders": TopicEntry(read_queue_nums=4, write_queue_nums=4)}, True,
     Outcome.OVERWRITE, True, "readQueueNums 4 -> 8; writeQueueNums 4 -> 8"),
    ("--overwrite of a queue.type RocketMQ never changes: refused",
     {"orders": TopicEntry(read_queue_nums=8, write_queue_nums=8, attributes={"queue.type": "BatchCQ"})}, True,
     Outcome.REFUSED, False, "rule: RocketMQ does not change queue.type of an existing topic; fix: delete the topic"),
]  # fmt: skip


@pytest.mark.parametrize(("have", "overwrite", "outcome", "write", "detail"), [c[1:] for c in TOPIC_CASES],
                         ids=[c[0] for c in TOPIC_CASES])  # fmt: skip
def test_topic_steps(have: dict[str, TopicEntry], overwrite: bool, outcome: Outcome, write: bool, detail: str) -> None:
    (step,) = _only(StepKind.TOPIC, {"topics": {"orders": ORDERS}}, _target(have, {}), overwrite)
    assert (step.outcome, step.write, step.address) == (outcome, write, "m:1")
    assert detail in step.detail
    assert step.line().startswith("topic orders on broker-a (m:1): ")


def test_an_overwrite_removes_attributes_the_backup_does_not_have() -> None:
    have = {"orders": TopicEntry(read_queue_nums=4, write_queue_nums=4, attributes={"reserve.time": "72"})}
    (step,) = _only(StepKind.TOPIC, {"topics": {"orders": ORDERS}}, _target(have, {}), overwrite=True)
    assert step.outcome is Outcome.OVERWRITE and step.removed_attributes == ("reserve.time",)


def test_no_master_refuses_every_topic_and_group_with_the_reason_and_the_fix() -> None:
    target = _target(None, None, master=None, error="no master is registered with the name servers")
    steps = _only(StepKind.TOPIC, {"topics": {"orders": ORDERS}}, target)
    steps += _only(StepKind.SUBSCRIPTION_GROUP, {"subscription_groups": {"readers": READERS}}, target)
    assert [s.outcome for s in steps] == [Outcome.REFUSED, Outcome.REFUSED]
    assert all("no master is registered" in s.detail and "fix: restore again" in s.detail for s in steps)


def test_a_system_topic_in_a_hand_edited_backup_is_refused() -> None:
    obs = _observation(topics={}, users=None, acls=None)
    backup = build_backup("DefaultCluster", SOURCE, [obs])
    doc = backup.to_json()
    doc["groups"]["broker-a"]["topics"]["TBW102"] = {"readQueueNums": 8, "writeQueueNums": 8}
    placed = placements(load_backup(doc, "f"), ["broker-a"], False, "DefaultCluster")
    (step,) = [s for s in plan_restore(placed, {"broker-a": _target({}, {})}, False) if s.kind is StepKind.TOPIC]
    assert step.outcome is Outcome.REFUSED and "system topic" in step.detail


GROUP_CASES = [
    ("missing: created", {}, False, Outcome.CREATE, True, ""),
    ("equal: present", {"readers": READERS}, False, Outcome.PRESENT, False, ""),
    ("a field only the target reports is not compared", {"readers": {**READERS, "newField": 1}}, False,
     Outcome.PRESENT, False, ""),
    ("different: listed, kept", {"readers": {**READERS, "retryMaxTimes": 3}}, False, Outcome.DIFFERENT, False,
     "retryMaxTimes 3 -> 16"),
    ("different, --overwrite", {"readers": {**READERS, "consumeEnable": False}}, True, Outcome.OVERWRITE, True,
     "consumeEnable False -> True"),
]  # fmt: skip


@pytest.mark.parametrize(("have", "overwrite", "outcome", "write", "detail"), [c[1:] for c in GROUP_CASES],
                         ids=[c[0] for c in GROUP_CASES])  # fmt: skip
def test_subscription_group_steps(
    have: dict[str, dict[str, Any]], overwrite: bool, outcome: Outcome, write: bool, detail: str
) -> None:
    content = {"subscription_groups": {"readers": READERS}}
    (step,) = _only(StepKind.SUBSCRIPTION_GROUP, content, _target({}, have), overwrite)
    assert (step.outcome, step.write) == (outcome, write) and detail in step.detail
    assert step.subscription_group is not None and step.subscription_group["groupName"] == "readers"


def _replica(users: list[UserEntry] | None = None, acls: list[AclDoc] | None = None) -> ReplicaAuth:
    return ReplicaAuth({u.username: u for u in users or []}, {a.subject: a for a in acls or []})


USER_CASES = [
    ("missing: created", _replica(), False, Outcome.CREATE, True, ""),
    ("equal: present", _replica([APP]), False, Outcome.PRESENT, False, ""),
    ("another password: listed, never shown", _replica([UserEntry(username="app", password="x")]), False,
     Outcome.DIFFERENT, False, "password differs"),
    ("disabled on the target, --overwrite", _replica([UserEntry(username="app", password="s3cret-app",
     user_status="disable")]), True, Outcome.OVERWRITE, True, "userStatus disable -> enable"),
]  # fmt: skip


@pytest.mark.parametrize(("replica", "overwrite", "outcome", "write", "detail"), [c[1:] for c in USER_CASES],
                         ids=[c[0] for c in USER_CASES])  # fmt: skip
def test_user_steps(replica: ReplicaAuth, overwrite: bool, outcome: Outcome, write: bool, detail: str) -> None:
    (step,) = _only(StepKind.USER, {"users": [APP], "acls": []}, _target({}, {}, {"m:1": replica}), overwrite)
    assert (step.outcome, step.write) == (outcome, write) and detail in step.detail
    assert not any(p in step.line() for p in PASSWORDS)


def test_overwrite_never_replaces_a_super_user_of_the_target() -> None:
    """The target's admin (spec.auth.adminSecret) signs the brokers' and the operator's requests: the source
    cluster's admin password must not replace it."""
    theirs = UserEntry(username="admin", password="target-admin-password", user_type="Super")
    replica = _replica([theirs, APP])
    (step, app) = _only(StepKind.USER, {"users": [ADMIN, APP], "acls": []}, _target({}, {}, {"m:1": replica}), True)
    assert (step.name, step.outcome, step.write) == ("admin", Outcome.DIFFERENT, False)
    assert "password differs" in step.detail and "never replaces a Super user" in step.detail
    assert "fix: change it through the group's spec.auth.adminSecret" in step.detail
    assert app.outcome is Outcome.PRESENT and "target-admin-password" not in step.line()


def test_users_go_to_every_replica_and_before_their_acls() -> None:
    replicas = {"m:1": _replica(), "s:2": _replica([APP], [APP_ACL]), "s:3": _replica()}
    steps = _only(StepKind.USER, {"users": [APP], "acls": [APP_ACL]}, _target({}, {}, replicas))
    steps += _only(StepKind.ACL, {"users": [APP], "acls": [APP_ACL]}, _target({}, {}, replicas))
    assert [(s.address, s.outcome) for s in steps if s.kind is StepKind.USER] == [
        ("m:1", Outcome.CREATE),
        ("s:2", Outcome.PRESENT),
        ("s:3", Outcome.CREATE),
    ]
    placed = placements(_backup(_observation(topics={}, subscription_groups={})), ["broker-a"], False, "c")
    order = [(s.kind, s.address) for s in plan_restore(placed, {"broker-a": _target({}, {}, replicas)}, False)]
    assert order.index((StepKind.USER, "m:1")) < order.index((StepKind.ACL, "m:1"))


def test_a_replica_without_a_user_store_refuses_users_with_the_fix() -> None:
    replicas = {"m:1": ReplicaAuth(), "s:2": ReplicaAuth(error="reading its users failed: timeout")}
    steps = _only(StepKind.USERS_AND_ACLS, {"users": [APP, ADMIN], "acls": [APP_ACL]}, _target({}, {}, replicas))
    assert [(s.address, s.outcome, s.name) for s in steps] == [
        ("m:1", Outcome.REFUSED, "(2 user(s), 1 ACL(s))"),
        ("s:2", Outcome.REFUSED, "(2 user(s), 1 ACL(s))"),
    ]
    assert steps[0].line().startswith("users and ACLs (2 user(s), 1 ACL(s)) on broker-a (m:1): not restored: ")
    assert "auth is off" in steps[0].detail and "fix: enable spec.auth" in steps[0].detail
    assert "timeout" in steps[1].detail


def test_a_group_without_users_in_the_backup_plans_no_user_step() -> None:
    steps = _only(StepKind.USER, {"users": None, "acls": None}, _target({}, {}, {"m:1": ReplicaAuth()}))
    assert steps == []


WIDER_SUB = AclEntryDoc(resource="Group:readers", actions=["Get", "Sub", "Update"])
ACL_CASES = [
    ("no ACL: created whole", None, False, Outcome.CREATE, True, True, ["Group:readers", "Topic:orders"]),
    ("equal: present", APP_ACL, False, Outcome.PRESENT, False, False, []),
    ("an entry missing: added (merged)", AclDoc(subject="User:app", policies=[AclPolicy(entries=[SUB])]), False,
     Outcome.CREATE, True, False, ["Topic:orders"]),
    ("an entry differs, another missing: the missing one added, the other kept",
     AclDoc(subject="User:app", policies=[AclPolicy(entries=[WIDER_SUB])]), False, Outcome.DIFFERENT, True, False,
     ["Topic:orders"]),
    ("an entry differs, --overwrite: written too",
     AclDoc(subject="User:app", policies=[AclPolicy(entries=[WIDER_SUB])]), True, Outcome.OVERWRITE, True, False,
     ["Group:readers", "Topic:orders"]),
    ("only a differing entry: listed, nothing written",
     AclDoc(subject="User:app", policies=[AclPolicy(entries=[PUB, WIDER_SUB])]), False, Outcome.DIFFERENT, False,
     False, []),
    ("an extra entry on the target is not a difference (never deleted)",
     AclDoc(subject="User:app", policies=[AclPolicy(entries=[PUB, SUB, AclEntryDoc(resource="Topic:x", actions=[])])]),
     False, Outcome.PRESENT, False, False, []),
]  # fmt: skip


@pytest.mark.parametrize(("have", "overwrite", "outcome", "write", "create", "written"), [c[1:] for c in ACL_CASES],
                         ids=[c[0] for c in ACL_CASES])  # fmt: skip
def test_acl_steps(
    have: AclDoc | None, overwrite: bool, outcome: Outcome, write: bool, create: bool, written: list[str]
) -> None:
    replica = _replica([APP], [have] if have is not None else [])
    (step,) = _only(StepKind.ACL, {"users": [APP], "acls": [APP_ACL]}, _target({}, {}, {"m:1": replica}), overwrite)
    assert (step.outcome, step.write, step.acl_create) == (outcome, write, create)
    assert sorted(r for _, r in (step.acl.entries() if step.acl else {})) == written


def test_a_differing_acl_entry_names_what_differs() -> None:
    have = AclDoc(subject="User:app", policies=[AclPolicy(entries=[PUB, WIDER_SUB])])
    replica = _replica([APP], [have])
    (step,) = _only(StepKind.ACL, {"users": [APP], "acls": [APP_ACL]}, _target({}, {}, {"m:1": replica}))
    assert step.detail == "Group:readers: actions Get,Sub,Update -> Get,Sub"


FAILED_CASES = [
    ("created: not failed before the writes, missing after", Outcome.CREATE, True, True),
    ("present", Outcome.PRESENT, False, False),
    ("different and kept", Outcome.DIFFERENT, False, False),
    ("different ACL with missing entries still to write", Outcome.DIFFERENT, True, True),
    ("refused", Outcome.REFUSED, False, True),
]  # fmt: skip


@pytest.mark.parametrize(("outcome", "write", "failed"), [c[1:] for c in FAILED_CASES],
                         ids=[c[0] for c in FAILED_CASES])  # fmt: skip
def test_restore_failed(outcome: Outcome, write: bool, failed: bool) -> None:
    step = RestoreStep(StepKind.TOPIC, "t", "g", "a:1", outcome, write=write)
    assert bool(restore_failed([step])) is failed


def test_summary_counts_each_outcome() -> None:
    steps = [RestoreStep(StepKind.TOPIC, "t", "g", "a", o) for o in (Outcome.CREATE, Outcome.CREATE, Outcome.REFUSED)]
    assert summary(steps, written=True) == (
        "2 created, 0 already present, 0 different (kept), 0 overwritten, 1 not restorable"
    )
    assert summary(steps, written=False) == (
        "2 to create, 0 already present, 0 different (kept), 0 to overwrite, 1 not restorable"
    )


def test_a_fresh_target_gets_everything_and_an_identical_one_nothing() -> None:
    backup = _backup()
    placed = placements(backup, ["broker-a"], False, "DefaultCluster")
    fresh = _target({}, {}, {"m:1": _replica(), "s:2": _replica()})
    steps = plan_restore(placed, {"broker-a": fresh}, False)
    assert all(s.outcome is Outcome.CREATE and s.write for s in steps)
    assert len(steps) == 2 + 1 + 2 * (2 + 1)  # topics, a group, per replica: users and an ACL
    group = backup.groups["broker-a"]
    holding = ReplicaAuth({u.username: u for u in group.users or []}, {a.subject: a for a in group.acls or []})
    same = _target(dict(group.topics), dict(group.subscription_groups), {"m:1": holding, "s:2": holding})
    again = plan_restore(placed, {"broker-a": same}, False)
    assert {s.outcome for s in again} == {Outcome.PRESENT} and not restore_failed(again)
