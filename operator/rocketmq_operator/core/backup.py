"""Metadata backup and restore, decided from plain data: the document, how it is built, read back and restored.

Contract:

* `MetadataBackup` is the document `rocketmq-operator backup` writes (JSON, camelCase): `kind`
  (`RocketMQMetadataBackup`), `formatVersion` (`FORMAT_VERSION`), `cluster`, `source` (name servers, when, which
  tool), and per broker group (`groups`, by brokerName): the master it was read from, its user topics (queues, perm,
  order, filter type, sys flag, attributes: the placement), its subscription groups (RocketMQ's
  `SubscriptionGroupConfig` as the broker answered it, every field kept), and its ACL 2.0 users (passwords in clear
  text: the document is a secret) and ACLs, or null for a group whose brokers keep no user store (auth off).
  Consumer offsets and messages are not part of it.
* `build_backup(cluster, source, observations)` turns what each group's master answered into the document,
  leaving RocketMQ's own topics (`is_backup_internal_topic`) and consumer groups (`is_system_group`) out.
* `load_backup(data, where)` checks a parsed JSON value; `choose_cluster` picks the cluster a backup or restore
  is about; `placements` puts each group's content on the target group of the same name, or with `every_group`
  the union of all groups on every target group. Each refusal is a `BackupError` whose text is one line naming
  the field, the value, the rule and the fix (never a password); `BackupInputError` when what the user gave is
  refused (the file, a cluster or group name), a plain `BackupError` when the cluster is not in a state to go on.
* `plan_restore(placement, targets, overwrite)` compares the content with what each target group holds
  (`TargetGroup`: its master's topics and subscription groups, each replica's users and ACLs: every broker keeps
  its own user store, nothing replicates it) and returns one `RestoreStep` per item and place: create what is
  missing, leave alone what is present and equal, list what differs (replaced only with `overwrite`), refuse what
  cannot be restored with the reason. It never deletes. `restore_failed(steps)` says whether anything is missing.

No I/O, no clocks: the caller passes the time and the observations.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from rocketmq_operator.api.names import GROUP_NAME_MAX, TOPIC_NAME_MAX, TOPIC_NAME_PATTERN
from rocketmq_operator.core.topics import MESSAGE_TYPE_ATTRIBUTE, UNCHANGEABLE_ATTRIBUTES, is_internal_topic

KIND = "RocketMQMetadataBackup"
FORMAT_VERSION = 1
NORMAL = "NORMAL"  # RocketMQ's message type of a topic without the attribute
SUPER = "Super"  # RocketMQ's UserType of an administrator

# Topics RocketMQ components make for themselves beyond core.topics' list: the Proxy's heartbeat syncer topic
# (ProxyConfig.heartbeatSyncerTopicName) and the RocksDB offset checkpoint topic (TopicValidator).
COMPONENT_TOPICS = ("DefaultHeartBeatSyncerTopic", "CHECKPOINT_TOPIC")
# The consumer and producer groups every broker predefines (MixAll.PREDEFINE_GROUP_SET, SubscriptionGroupManager's
# init) and the prefix of RocketMQ's system groups (MixAll.CID_RMQ_SYS_PREFIX).
SYSTEM_GROUPS = (
    "DEFAULT_CONSUMER",
    "DEFAULT_PRODUCER",
    "TOOLS_CONSUMER",
    "SCHEDULE_CONSUMER",
    "FILTERSRV_CONSUMER",
    "__MONITOR_CONSUMER",
    "CLIENT_INNER_PRODUCER",
    "SELF_TEST_P_GROUP",
    "SELF_TEST_C_GROUP",
    "CID_ONS-HTTP-PROXY",
    "CID_ONSAPI_PERMISSION",
    "CID_ONSAPI_OWNER",
    "CID_ONSAPI_PULL",
    "CID_RMQ_SYS_TRANS",
)
SYSTEM_GROUP_PREFIX = "CID_RMQ_SYS_"
# Fields of a SubscriptionGroupConfig that name it rather than configure it.
_GROUP_NAME_FIELD = "groupName"
NO_MASTER_FIX = "fix: restore again once the group has a master (`local status`, `kubectl get brokergroups`)"


class BackupError(ValueError):
    """A backup or restore that cannot go on: one line naming the field, the value, the rule and the fix."""


class BackupInputError(BackupError):
    """What the user gave is refused (the file, its format version, a group or cluster name): bad input, not a
    failure of the cluster."""


def is_backup_internal_topic(name: str, own_names: Iterable[str] = ()) -> bool:
    """RocketMQ's own topics (system, retry, dead-letter, the brokers' and cluster's names, the Proxy's): a fresh
    cluster makes them itself, so they are neither backed up nor restored."""
    return name in COMPONENT_TOPICS or is_internal_topic(name, own_names)


def is_system_group(name: str) -> bool:
    return name in SYSTEM_GROUPS or name.startswith(SYSTEM_GROUP_PREFIX)


# The document ------------------------------------------------------------------------------------------------


class _Doc(BaseModel):
    """camelCase on the wire; unknown fields refused (a typo in a hand-edited backup must not pass silently)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


class TopicEntry(_Doc):
    """One topic as a master's topic table holds it (RocketMQ's TopicConfig, its name being the key)."""

    read_queue_nums: int = Field(ge=0, le=65535)
    write_queue_nums: int = Field(ge=0, le=65535)
    perm: int = Field(default=6, ge=0, le=7)
    order: bool = False
    topic_filter_type: str = "SINGLE_TAG"
    topic_sys_flag: int = 0
    attributes: dict[str, str] = Field(default_factory=dict)

    def described(self) -> str:
        kind = self.attributes.get(MESSAGE_TYPE_ATTRIBUTE, NORMAL)
        return f"{self.read_queue_nums}/{self.write_queue_nums} queues, perm {self.perm}, {kind}"


class UserEntry(_Doc):
    """An ACL 2.0 user (RocketMQ's UserInfo); the password is in clear text and never shown by repr."""

    username: str = Field(min_length=1)
    password: str = Field(default="", repr=False)
    user_type: str = "Normal"
    user_status: str = "enable"


class AclEntryDoc(_Doc):
    resource: str = Field(min_length=1)
    actions: list[str] = Field(default_factory=list)
    source_ips: list[str] = Field(default_factory=list)
    decision: str = "Allow"

    def same_as(self, other: AclEntryDoc) -> bool:
        return (
            set(self.actions) == set(other.actions)
            and set(self.source_ips) == set(other.source_ips)
            and self.decision.lower() == other.decision.lower()
        )


class AclPolicy(_Doc):
    policy_type: str = "Custom"
    entries: list[AclEntryDoc] = Field(default_factory=list)


class AclDoc(_Doc):
    """One subject's ACL (RocketMQ's AclInfo): its policies and their entries."""

    subject: str = Field(min_length=1)
    policies: list[AclPolicy] = Field(default_factory=list)

    def entries(self) -> dict[tuple[str, str], AclEntryDoc]:
        """(policy type, resource) -> entry: how RocketMQ keys an entry (UPDATE_ACL merges by it)."""
        return {(p.policy_type.lower(), e.resource): e for p in self.policies for e in p.entries}


def _check_names(names: Iterable[str], what: str, max_len: int) -> None:
    for name in names:
        if not re.fullmatch(TOPIC_NAME_PATTERN, name) or len(name) > max_len:
            raise ValueError(
                f"{name[:40]!r} is not a RocketMQ {what} name ({TOPIC_NAME_PATTERN}, at most {max_len} characters)"
            )


class GroupBackup(_Doc):
    """What one broker group's master held."""

    master: str = ""
    topics: dict[str, TopicEntry] = Field(default_factory=dict)
    subscription_groups: dict[str, dict[str, Any]] = Field(default_factory=dict)
    users: list[UserEntry] | None = None
    acls: list[AclDoc] | None = None

    @field_validator("topics")
    @classmethod
    def _topic_names(cls, value: dict[str, TopicEntry]) -> dict[str, TopicEntry]:
        _check_names(value, "topic", TOPIC_NAME_MAX)
        return value

    @field_validator("subscription_groups")
    @classmethod
    def _group_names(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        _check_names(value, "consumer group", GROUP_NAME_MAX)
        return value


class BackupSource(_Doc):
    name_servers: list[str] = Field(default_factory=list)
    taken_at: str = ""
    tool: str = ""


class MetadataBackup(_Doc):
    kind: Literal["RocketMQMetadataBackup"] = "RocketMQMetadataBackup"
    format_version: int = FORMAT_VERSION
    cluster: str = Field(min_length=1)
    source: BackupSource = Field(default_factory=BackupSource)
    groups: dict[str, GroupBackup] = Field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)

    def to_text(self) -> str:
        """The document as `rocketmq-operator backup` writes it (and a scheduled backup stores it)."""
        return json.dumps(self.to_json(), indent=2) + "\n"


# Building the document -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupObservation:
    """What one group's master answered: its whole topic and subscription-group tables (RocketMQ's own included),
    and its users and ACLs (None: the broker keeps no user store, auth is off)."""

    group: str
    master: str
    topics: Mapping[str, TopicEntry]
    subscription_groups: Mapping[str, Mapping[str, Any]]
    users: Sequence[UserEntry] | None = None
    acls: Sequence[AclDoc] | None = None


def has_user_store(broker_config: Mapping[str, str]) -> bool:
    """Whether a broker keeps ACL 2.0 users (GET_BROKER_CONFIG's `authenticationMetadataProvider`): without one it
    answers every user request with SYSTEM_ERROR ("authenticationMetadataProvider is not configured")."""
    return bool(broker_config.get("authenticationMetadataProvider", "").strip())


def user_from_broker(raw: Mapping[str, Any]) -> UserEntry:
    """A UserInfo as AUTH_LIST_USER answers it (absent fields: RocketMQ's defaults)."""
    return UserEntry(
        username=str(raw.get("username") or ""),
        password=str(raw.get("password") or ""),
        user_type=str(raw.get("userType") or "Normal"),
        user_status=str(raw.get("userStatus") or "enable"),
    )


def acl_from_broker(raw: Mapping[str, Any]) -> AclDoc:
    """An AclInfo as AUTH_LIST_ACL answers it (fastjson leaves out null lists)."""
    policies = [
        AclPolicy(
            policy_type=str(policy.get("policyType") or "Custom"),
            entries=[
                AclEntryDoc(
                    resource=str(entry.get("resource") or ""),
                    actions=sorted(str(a) for a in entry.get("actions") or []),
                    source_ips=sorted(str(ip) for ip in entry.get("sourceIps") or []),
                    decision=str(entry.get("decision") or "Allow"),
                )
                for entry in policy.get("entries") or []
            ],
        )
        for policy in raw.get("policies") or []
    ]
    return AclDoc(subject=str(raw.get("subject") or ""), policies=policies)


def build_backup(cluster: str, source: BackupSource, observations: Sequence[GroupObservation]) -> MetadataBackup:
    """The document for ``cluster``: each group's user topics and consumer groups, users and ACLs, sorted."""
    own = {cluster, *(o.group for o in observations)}
    groups: dict[str, GroupBackup] = {}
    for obs in sorted(observations, key=lambda o: o.group):
        groups[obs.group] = GroupBackup(
            master=obs.master,
            topics={n: t for n, t in sorted(obs.topics.items()) if not is_backup_internal_topic(n, own)},
            subscription_groups={
                n: dict(g) for n, g in sorted(obs.subscription_groups.items()) if not is_system_group(n)
            },
            users=None if obs.users is None else sorted(obs.users, key=lambda u: u.username),
            acls=None if obs.acls is None else sorted(obs.acls, key=lambda a: a.subject),
        )
    return MetadataBackup(cluster=cluster, source=source, groups=groups)


def describe_backup(backup: MetadataBackup) -> list[str]:
    """One line per group: what the document holds for it (names and counts, never a password)."""
    lines = []
    for name, group in backup.groups.items():
        users = "no user store (auth off)" if group.users is None else f"{len(group.users)} user(s)"
        acls = "" if group.acls is None else f", {len(group.acls)} ACL(s)"
        lines.append(
            f"{name}: {len(group.topics)} topic(s), {len(group.subscription_groups)} subscription group(s), "
            f"{users}{acls} (read from {group.master or 'its master'})"
        )
    return lines


# Reading it back -----------------------------------------------------------------------------------------------

BACKUP_RULE = "rule: a backup is the JSON document `rocketmq-operator backup` writes"


def _where(loc: Sequence[int | str]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(the document)"


def load_backup(data: Any, where: str) -> MetadataBackup:
    """The document in ``data`` (parsed JSON read from ``where``), or a BackupError naming what is wrong."""
    fix = "fix: name a file written by `rocketmq-operator backup` (or correct the field)"
    if not isinstance(data, dict):
        raise BackupInputError(
            f"{where}: the document is a JSON {type(data).__name__}, not an object; {BACKUP_RULE}; {fix}"
        )
    if data.get("kind") != KIND:
        raise BackupInputError(f"{where}: kind: {data.get('kind')!r:.60} is not {KIND!r}; {BACKUP_RULE}; {fix}")
    version = data.get("formatVersion")
    if version != FORMAT_VERSION:
        tool = data.get("source", {}).get("tool") if isinstance(data.get("source"), dict) else None
        raise BackupInputError(
            f"{where}: formatVersion: {version!r:.20} is not a version this rocketmq-operator reads; rule: it reads "
            f"formatVersion {FORMAT_VERSION}; fix: restore with the rocketmq-operator that wrote the file"
            + (f" (source.tool: {tool})" if isinstance(tool, str) and tool else "")
        )
    try:
        return MetadataBackup.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = _where(error["loc"])
        value = error.get("input")
        # A value is shown only when it cannot be (or hold) a password.
        shown = (
            f" (value {value!r:.60})"
            if isinstance(value, str | int | float | bool) and "users" not in error["loc"]
            else ""
        )
        raise BackupInputError(f"{where}: {loc}: {error['msg']}{shown}; {BACKUP_RULE}; {fix}") from None


def choose_cluster(
    clusters: Mapping[str, Sequence[str]], wanted: str | None, option: str, fallback: str | None = None
) -> str:
    """The cluster to work on among those the name servers know (cluster -> its groups): ``wanted`` (named by
    ``option``), else ``fallback`` (a restore: the backup's cluster), else the only one."""
    known = ", ".join(sorted(clusters)) or "none"
    if not clusters:
        raise BackupError(
            "the name servers know no cluster (no broker registered with them); rule: brokers register with the "
            "name servers they are given; fix: check --namesrv, and that the brokers run (`local status`)"
        )
    if wanted is not None:
        if wanted not in clusters:
            raise BackupInputError(
                f"{option} {wanted}: not a cluster the name servers know (they know: {known}); rule: a cluster is "
                f"a brokerClusterName registered with them; fix: pass one of {known}"
            )
        return wanted
    if fallback is not None:
        if fallback in clusters:
            return fallback
        raise BackupInputError(
            f"cluster: {fallback!r} of the backup is not a cluster of the target (it has: {known}); rule: a restore "
            f"goes to the cluster of the same name unless told otherwise; fix: pass {option} NAME to restore onto "
            "another cluster"
        )
    if len(clusters) > 1:
        raise BackupInputError(
            f"{option}: the name servers know several clusters ({known}); rule: a backup covers one cluster; "
            f"fix: pass {option} NAME"
        )
    return next(iter(clusters))


# Where a restore puts what -------------------------------------------------------------------------------------


@dataclass
class GroupContent:
    """What one target group is to hold: topics, subscription groups, and users and ACLs (None: none backed up)."""

    topics: dict[str, TopicEntry] = field(default_factory=dict)
    subscription_groups: dict[str, dict[str, Any]] = field(default_factory=dict)
    users: dict[str, UserEntry] | None = None
    acls: dict[str, AclDoc] | None = None


@dataclass(frozen=True)
class Placement:
    """Target group -> its content; `conflicts`: one line per item two backed-up groups define differently (with
    `every_group`, where one definition goes everywhere): such an item is not restored."""

    groups: dict[str, GroupContent]
    conflicts: tuple[tuple[str, str, str], ...] = ()  # (kind, name, line)


def _content(group: GroupBackup) -> GroupContent:
    return GroupContent(
        topics=dict(group.topics),
        subscription_groups={n: dict(g) for n, g in group.subscription_groups.items()},
        users=None if group.users is None else {u.username: u for u in group.users},
        acls=None if group.acls is None else {a.subject: a for a in group.acls},
    )


def _merge(
    kind: str,
    into: dict[str, Any],
    items: Mapping[str, Any],
    source: str,
    seen_in: dict[tuple[str, str], str],
    conflicts: dict[tuple[str, str], str],
    show: Any,
) -> None:
    for name, item in items.items():
        key = (kind, name)
        if name not in into:
            into[name] = item
            seen_in[key] = source
        elif into[name] != item and key not in conflicts:
            conflicts[key] = (
                f"{kind} {name}: {seen_in[key]} has {show(into[name])}, {source} has {show(item)}; rule: "
                "--onto-every-group puts one definition on every group; fix: make the groups' definitions agree in "
                "the backup file, or restore onto groups of the same names (without --onto-every-group)"
            )


def _user_shown(user: Any) -> str:
    return f"type {user.user_type}, status {user.user_status}, a password"  # never the password itself


def placements(backup: MetadataBackup, target_groups: Sequence[str], every_group: bool, cluster: str) -> Placement:
    """Which target group gets what: each backed-up group onto the target group of the same name, or (with
    ``every_group``) the union of every backed-up group onto every target group."""
    if not target_groups:
        raise BackupError(
            f"cluster {cluster}: no broker group is registered with the name servers; rule: a restore writes to "
            "the groups' masters; fix: start the target cluster's brokers first (`local up`, `kubectl apply`)"
        )
    if not every_group:
        missing = [g for g in backup.groups if g not in target_groups]
        if missing:
            raise BackupInputError(
                f"groups.{missing[0]}: {missing[0]!r} of the backup is not a broker group of cluster {cluster} (it "
                f"has: {', '.join(sorted(target_groups))}); rule: a restore puts each group's metadata back on the "
                f"group of the same name; fix: bring up {', '.join(missing)} in the target cluster, or pass "
                "--onto-every-group to put the metadata of every backed-up group on every group of the target"
            )
        return Placement({name: _content(g) for name, g in backup.groups.items()})
    merged = GroupContent()
    seen_in: dict[tuple[str, str], str] = {}
    conflicts: dict[tuple[str, str], str] = {}
    for name, group in sorted(backup.groups.items()):
        _merge("topic", merged.topics, group.topics, name, seen_in, conflicts, lambda t: t.described())
        _merge(
            "subscription group",
            merged.subscription_groups,
            group.subscription_groups,
            name,
            seen_in,
            conflicts,
            lambda _g: "another configuration",
        )
        if group.users is not None:
            merged.users = {} if merged.users is None else merged.users
            _merge("user", merged.users, {u.username: u for u in group.users}, name, seen_in, conflicts, _user_shown)
        if group.acls is not None:
            merged.acls = {} if merged.acls is None else merged.acls
            _merge(
                "acl",
                merged.acls,
                {a.subject: a for a in group.acls},
                name,
                seen_in,
                conflicts,
                lambda a: f"{len(a.entries())} entries",
            )
    tables: dict[str, dict[str, Any] | None] = {
        "topic": merged.topics,
        "subscription group": merged.subscription_groups,
        "user": merged.users,
        "acl": merged.acls,
    }
    for kind, name in conflicts:
        table = tables[kind]
        if table is not None:  # a conflicting item is not restored anywhere: its refusal says why
            table.pop(name, None)
    return Placement(
        {g: merged for g in sorted(target_groups)},
        tuple((kind, name, line) for (kind, name), line in sorted(conflicts.items())),
    )


# What a target holds, and the plan -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ReplicaAuth:
    """One broker's users and ACLs; None: it keeps no user store (auth off), or could not be read (`error`)."""

    users: Mapping[str, UserEntry] | None = None
    acls: Mapping[str, AclDoc] | None = None
    error: str | None = None


@dataclass(frozen=True)
class TargetGroup:
    """One target group as observed: its master's topic and subscription-group tables (None: not read, `error`
    says why) and each replica's users and ACLs, by address (the master first)."""

    name: str
    master: str | None
    topics: Mapping[str, TopicEntry] | None = None
    subscription_groups: Mapping[str, Mapping[str, Any]] | None = None
    replicas: Mapping[str, ReplicaAuth] = field(default_factory=dict)
    error: str | None = None


class StepKind(StrEnum):
    TOPIC = "topic"
    SUBSCRIPTION_GROUP = "subscription group"
    USER = "user"
    ACL = "acl"
    USERS_AND_ACLS = "users and ACLs"  # all of a group's, refused at once on a broker that cannot hold them


class Outcome(StrEnum):
    CREATE = "create"  # missing: to be created
    PRESENT = "present"  # there and equal
    DIFFERENT = "different"  # there, differs: listed and kept
    OVERWRITE = "overwrite"  # there, differs: replaced (overwrite)
    REFUSED = "refused"  # cannot be restored: the reason is in `detail`


@dataclass(frozen=True)
class RestoreStep:
    """One item at one place. `write` says whether the executor sends something: a create, an overwrite, or the
    missing entries of an ACL whose other entries differ. `acl` is the body to send (only the entries to write);
    `acl_create`: the broker holds no ACL for the subject yet."""

    kind: StepKind
    name: str
    group: str
    address: str | None
    outcome: Outcome
    detail: str = ""
    write: bool = False
    topic: TopicEntry | None = None
    subscription_group: Mapping[str, Any] | None = None
    user: UserEntry | None = None
    acl: AclDoc | None = None
    acl_create: bool = False
    removed_attributes: tuple[str, ...] = ()

    def line(self, *, written: bool = True, verb: str | None = None) -> str:
        """One line: kind, name, where, what happens (``written``: it was done, else it is to be done; ``verb``
        replaces that word), the detail. Never a password."""
        where = self.group + (f" ({self.address})" if self.address else "")
        verb = (
            verb
            or {
                Outcome.CREATE: "created" if written else "to create",
                Outcome.PRESENT: "present",
                Outcome.DIFFERENT: "differs, kept (--overwrite replaces it)",
                Outcome.OVERWRITE: "differs, overwritten" if written else "differs, to overwrite",
                Outcome.REFUSED: "not restored",
            }[self.outcome]
        )
        return f"{self.kind} {self.name} on {where}: {verb}" + (f": {self.detail}" if self.detail else "")


def _attributes(topic: TopicEntry) -> dict[str, str]:
    out = dict(topic.attributes)
    out.setdefault(MESSAGE_TYPE_ATTRIBUTE, NORMAL)  # the same topic, whether the attribute is written or not
    return out


def topic_differences(want: TopicEntry, have: TopicEntry) -> list[str]:
    """``field target -> backup`` for each field that differs."""
    out = [
        f"{to_camel(f)} {getattr(have, f)} -> {getattr(want, f)}"
        for f in ("read_queue_nums", "write_queue_nums", "perm", "order", "topic_filter_type", "topic_sys_flag")
        if getattr(have, f) != getattr(want, f)
    ]
    wanted, had = _attributes(want), _attributes(have)
    for key in sorted(set(wanted) | set(had)):
        if wanted.get(key) != had.get(key):
            out.append(f"{key} {had.get(key, '(none)')} -> {wanted.get(key, '(none)')}")
    return out


def group_differences(want: Mapping[str, Any], have: Mapping[str, Any]) -> list[str]:
    """Fields both configurations have and that differ (a field one RocketMQ release does not report is not
    compared: 5.4 and 5.5 do not send the same set)."""
    return [
        f"{key} {have[key]!r:.40} -> {want[key]!r:.40}"
        for key in sorted(set(want) & set(have))
        if key != _GROUP_NAME_FIELD and want[key] != have[key]
    ]


def user_differences(want: UserEntry, have: UserEntry) -> list[str]:
    out = ["password differs"] if want.password != have.password else []  # never the values
    if want.user_type != have.user_type:
        out.append(f"userType {have.user_type} -> {want.user_type}")
    if want.user_status.lower() != have.user_status.lower():
        out.append(f"userStatus {have.user_status} -> {want.user_status}")
    return out


def acl_entry_differences(want: AclEntryDoc, have: AclEntryDoc) -> list[str]:
    """``field target -> backup`` for each field of an ACL entry that differs."""
    out = []
    if set(want.actions) != set(have.actions):
        out.append(f"actions {','.join(sorted(have.actions))} -> {','.join(sorted(want.actions))}")
    if set(want.source_ips) != set(have.source_ips):
        had, wanted = ",".join(sorted(have.source_ips)) or "(any)", ",".join(sorted(want.source_ips)) or "(any)"
        out.append(f"sourceIps {had} -> {wanted}")
    if want.decision.lower() != have.decision.lower():
        out.append(f"decision {have.decision} -> {want.decision}")
    return out


def _acl_body(subject: str, entries: Mapping[tuple[str, str], AclEntryDoc], types: Mapping[str, str]) -> AclDoc:
    by_type: dict[str, list[AclEntryDoc]] = {}
    for (policy_type, _resource), entry in sorted(entries.items()):
        by_type.setdefault(types[policy_type], []).append(entry)
    return AclDoc(subject=subject, policies=[AclPolicy(policy_type=t, entries=e) for t, e in by_type.items()])


def _topic_steps(name: str, content: GroupContent, target: TargetGroup, overwrite: bool) -> list[RestoreStep]:
    steps: list[RestoreStep] = []
    own = {target.name}
    for topic, want in sorted(content.topics.items()):
        base = RestoreStep(StepKind.TOPIC, topic, name, target.master, Outcome.PRESENT, topic=want)
        if is_backup_internal_topic(topic, own):
            steps.append(
                replace(
                    base,
                    outcome=Outcome.REFUSED,
                    detail="a RocketMQ system topic; rule: a restore never changes RocketMQ's own topics; fix: "
                    "remove it from the backup file",
                )
            )
            continue
        if target.topics is None:
            steps.append(replace(base, outcome=Outcome.REFUSED, detail=f"{target.error}; {NO_MASTER_FIX}"))
            continue
        have = target.topics.get(topic)
        if have is None:
            steps.append(replace(base, outcome=Outcome.CREATE, detail=want.described(), write=True))
            continue
        changes = topic_differences(want, have)
        if not changes:
            steps.append(base)
        elif not overwrite:
            steps.append(replace(base, outcome=Outcome.DIFFERENT, detail="; ".join(changes)))
        else:
            fixed = [k for k in UNCHANGEABLE_ATTRIBUTES if _attributes(want).get(k) != _attributes(have).get(k)]
            if fixed:
                steps.append(
                    replace(
                        base,
                        outcome=Outcome.REFUSED,
                        detail=f"{'; '.join(changes)}; rule: RocketMQ does not change {fixed[0]} of an existing "
                        "topic; fix: delete the topic on the target first (mqadmin deleteTopic), then restore again",
                    )
                )
                continue
            removed = tuple(sorted(set(have.attributes) - set(want.attributes) - {MESSAGE_TYPE_ATTRIBUTE}))
            steps.append(
                replace(
                    base,
                    outcome=Outcome.OVERWRITE,
                    detail="; ".join(changes),
                    write=True,
                    removed_attributes=removed,
                )
            )
    return steps


def _group_steps(name: str, content: GroupContent, target: TargetGroup, overwrite: bool) -> list[RestoreStep]:
    steps: list[RestoreStep] = []
    for group, want in sorted(content.subscription_groups.items()):
        body = {**want, _GROUP_NAME_FIELD: group}
        base = RestoreStep(
            StepKind.SUBSCRIPTION_GROUP, group, name, target.master, Outcome.PRESENT, subscription_group=body
        )
        if target.subscription_groups is None:
            steps.append(replace(base, outcome=Outcome.REFUSED, detail=f"{target.error}; {NO_MASTER_FIX}"))
            continue
        have = target.subscription_groups.get(group)
        if have is None:
            steps.append(replace(base, outcome=Outcome.CREATE, write=True))
            continue
        changes = group_differences(body, have)
        if not changes:
            steps.append(base)
        else:
            outcome = Outcome.OVERWRITE if overwrite else Outcome.DIFFERENT
            steps.append(replace(base, outcome=outcome, detail="; ".join(changes), write=overwrite))
    return steps


def _no_store(replica: ReplicaAuth) -> str:
    reason = replica.error or "the broker keeps no ACL 2.0 user store (auth is off)"
    return (
        f"{reason}; rule: users and ACLs go to a broker with spec.auth enabled; fix: enable spec.auth on the "
        "target group (or restore onto a cluster that has it)"
    )


def _auth_steps(name: str, content: GroupContent, target: TargetGroup, overwrite: bool) -> list[RestoreStep]:
    """Users first, then ACLs (RocketMQ refuses an ACL whose user does not exist), replica by replica."""
    steps: list[RestoreStep] = []
    users = content.users or {}
    acls = content.acls or {}
    if not users and not acls:
        return steps
    if not target.replicas:
        what = f"({len(users)} user(s), {len(acls)} ACL(s))"
        steps.append(
            RestoreStep(
                StepKind.USERS_AND_ACLS,
                what,
                name,
                None,
                Outcome.REFUSED,
                f"no replica of the group answers; {NO_MASTER_FIX}",
            )
        )
        return steps
    for address, replica in target.replicas.items():
        if replica.users is None or replica.acls is None:
            what = f"({len(users)} user(s), {len(acls)} ACL(s))"
            steps.append(RestoreStep(StepKind.USERS_AND_ACLS, what, name, address, Outcome.REFUSED, _no_store(replica)))
            continue
        for username, want in sorted(users.items()):
            have = replica.users.get(username)
            base = RestoreStep(StepKind.USER, username, name, address, Outcome.PRESENT, user=want)
            if have is None:
                steps.append(replace(base, outcome=Outcome.CREATE, write=True))
                continue
            changes = user_differences(want, have)
            if not changes:
                steps.append(base)
            elif overwrite and have.user_type.lower() == SUPER.lower():
                # The brokers sign to each other and the operator signs to them as a Super user (spec.auth's
                # admin): replacing its password here would lock both out of the target.
                changes.append(
                    "rule: --overwrite never replaces a Super user of the target (the brokers and the operator sign "
                    "as it); fix: change it through the group's spec.auth.adminSecret"
                )
                steps.append(replace(base, outcome=Outcome.DIFFERENT, detail="; ".join(changes)))
            else:
                outcome = Outcome.OVERWRITE if overwrite else Outcome.DIFFERENT
                steps.append(replace(base, outcome=outcome, detail="; ".join(changes), write=overwrite))
        for subject, acl in sorted(acls.items()):
            steps.append(_acl_step(name, address, subject, acl, replica.acls.get(subject), overwrite))
    return steps


def _acl_step(
    group: str, address: str, subject: str, want: AclDoc, have: AclDoc | None, overwrite: bool
) -> RestoreStep:
    base = RestoreStep(StepKind.ACL, subject, group, address, Outcome.PRESENT)
    types = {p.policy_type.lower(): p.policy_type for p in want.policies}
    wanted = want.entries()
    if have is None:
        return replace(
            base,
            outcome=Outcome.CREATE,
            detail=f"{len(wanted)} entries",
            write=True,
            acl=_acl_body(subject, wanted, types),
            acl_create=True,
        )
    had = have.entries()
    missing = {k: e for k, e in wanted.items() if k not in had}
    differing = {k: e for k, e in wanted.items() if k in had and not e.same_as(had[k])}
    if not missing and not differing:
        return base
    added = f"adds {', '.join(r for _, r in sorted(missing))}" if missing else ""
    if not differing:
        return replace(base, outcome=Outcome.CREATE, detail=added, write=True, acl=_acl_body(subject, missing, types))
    shown = "; ".join(
        f"{resource}: {', '.join(acl_entry_differences(e, had[(t, resource)]))}"
        for (t, resource), e in sorted(differing.items())
    )
    detail = "; ".join(x for x in (shown, added) if x)
    to_write = {**missing, **differing} if overwrite else missing
    return replace(
        base,
        outcome=Outcome.OVERWRITE if overwrite else Outcome.DIFFERENT,
        detail=detail,
        write=bool(to_write),
        acl=_acl_body(subject, to_write, types) if to_write else None,
    )


def plan_restore(placement: Placement, targets: Mapping[str, TargetGroup], overwrite: bool) -> list[RestoreStep]:
    """Every item at every place it goes, in the order the executor must follow (per group: topics, subscription
    groups, then per replica users before ACLs); conflicts first, as refusals."""
    steps = [
        RestoreStep(StepKind(kind), name, "every group", None, Outcome.REFUSED, line.split(": ", 1)[1])
        for kind, name, line in placement.conflicts
    ]
    for name, content in sorted(placement.groups.items()):
        target = targets.get(name) or TargetGroup(name, None, error="the group is not registered")
        steps.extend(_topic_steps(name, content, target, overwrite))
        steps.extend(_group_steps(name, content, target, overwrite))
        steps.extend(_auth_steps(name, content, target, overwrite))
    return steps


def restore_failed(steps: Sequence[RestoreStep]) -> list[RestoreStep]:
    """The steps that leave something of the backup absent: refused, still to be created, or an ACL whose
    missing entries are still to be written (on the observation after the writes: what did not take)."""
    return [
        s
        for s in steps
        if s.outcome in (Outcome.REFUSED, Outcome.CREATE) or (s.outcome is Outcome.DIFFERENT and s.write)
    ]


def summary(steps: Sequence[RestoreStep], written: bool) -> str:
    """The counts of each outcome as one line (``written``: after the writes, else a plan)."""
    counts = {o: sum(1 for s in steps if s.outcome is o) for o in Outcome}
    created, overwritten = ("created", "overwritten") if written else ("to create", "to overwrite")
    return (
        f"{counts[Outcome.CREATE]} {created}, {counts[Outcome.PRESENT]} already present, "
        f"{counts[Outcome.DIFFERENT]} different (kept), {counts[Outcome.OVERWRITE]} {overwritten}, "
        f"{counts[Outcome.REFUSED]} not restorable"
    )
