"""Metadata backup and restore on a running cluster: the reads and writes behind `core.backup`.

Contract:

* `take_backup(client, cluster=..., ...)` finds the cluster's broker groups through the name servers
  (GET_BROKER_CLUSTER_INFO) and reads each group's master: GET_ALL_TOPIC_CONFIG, GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
  GET_BROKER_CONFIG (whether it keeps ACL 2.0 users) and, where it does, AUTH_LIST_USER and AUTH_LIST_ACL. It returns
  `core.backup.build_backup`'s document. A group without a master, or a read that fails, is a `BackupError` (one
  line): a backup is whole or not written at all.
* `restore(client, backup, ...)` observes the target cluster (`observe_targets`: each master's topics and
  subscription groups; each replica's users and ACLs, since every broker keeps its own user store), plans
  (`core.backup.plan_restore`), writes what the plan says in its order (topics and subscription groups on the
  master, which its slaves copy; users, then ACLs, on every replica), then observes and plans again: what is still
  missing is reported. A write that fails is one line in the report, never an exception; `dry_run` writes nothing.
* The client must sign as a Super user where auth is on (the caller gives it the credentials); a refusal for want
  of a signature says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from rocketmq_operator.core.backup import (
    AclDoc,
    BackupError,
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
    has_user_store,
    placements,
    plan_restore,
    restore_failed,
    user_from_broker,
)
from rocketmq_operator.remoting import (
    BrokerData,
    ClusterInfo,
    RemotingClient,
    RemotingError,
    RemotingException,
    ResponseCode,
)
from rocketmq_operator.remoting.admin import TopicAdmin, TopicConfigInfo
from rocketmq_operator.remoting.auth_admin import AuthAdmin

ADMIN_TIMEOUT_S = 5.0
SIGN_FIX = (
    "fix: sign as the cluster's admin (a Super user: spec.auth.adminSecret): --access-key USER with the password in "
    "$ROCKETMQ_SECRET_KEY (`local backup` / `local restore` sign by themselves)"
)


def _why(exc: Exception) -> str:
    """An exception as one line; a refusal for want of a signature says how to sign."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if isinstance(exc, RemotingError) and exc.code == ResponseCode.NO_PERMISSION:
        return f"{text}; rule: a broker with auth on answers admin requests signed by a Super user only; {SIGN_FIX}"
    return text


def topic_entry(config: TopicConfigInfo) -> TopicEntry:
    return TopicEntry(
        read_queue_nums=config.read_queue_nums,
        write_queue_nums=config.write_queue_nums,
        perm=config.perm,
        order=config.order,
        topic_filter_type=config.topic_filter_type,
        topic_sys_flag=config.topic_sys_flag,
        attributes=dict(config.attributes),
    )


def topic_config(name: str, entry: TopicEntry) -> TopicConfigInfo:
    return TopicConfigInfo(
        topic_name=name,
        read_queue_nums=entry.read_queue_nums,
        write_queue_nums=entry.write_queue_nums,
        perm=entry.perm,
        topic_filter_type=entry.topic_filter_type,
        topic_sys_flag=entry.topic_sys_flag,
        order=entry.order,
        attributes=dict(entry.attributes),
    )


async def _cluster_info(client: RemotingClient, namesrv: Sequence[str]) -> ClusterInfo:
    """GET_BROKER_CLUSTER_INFO from the client's own name servers, or from each of ``namesrv`` until one answers."""
    if not namesrv:
        return await client.get_cluster_info(timeout=ADMIN_TIMEOUT_S)
    failure: Exception | None = None
    for addr in namesrv:
        try:
            return await client.get_cluster_info(namesrv=addr, timeout=ADMIN_TIMEOUT_S)
        except (RemotingException, OSError) as exc:
            failure = exc
    assert failure is not None
    raise failure


async def cluster_groups(
    client: RemotingClient, cluster: str | None, *, fallback: str | None = None, namesrv: Sequence[str] = ()
) -> tuple[str, dict[str, BrokerData]]:
    """(the cluster chosen, its groups by brokerName) as the name servers know them (``namesrv``: these, instead of
    the client's own)."""
    try:
        info = await _cluster_info(client, namesrv)
    except (RemotingException, OSError) as exc:
        raise BackupError(
            f"--namesrv {';'.join(namesrv or client.namesrv_addrs)}: GET_BROKER_CLUSTER_INFO failed ({_why(exc)}); "
            "rule: the "
            "cluster's groups are found through its name servers; fix: pass the cluster's name servers (`local env` "
            "prints a local cluster's; on Kubernetes the <controllergroup>-connection ConfigMap's nameServers)"
        ) from None
    name = choose_cluster(info.cluster_addr_table, cluster, "--cluster", fallback)
    groups = {g: info.broker_addr_table[g] for g in info.cluster_addr_table[name] if g in info.broker_addr_table}
    return name, groups


async def _read_group(client: RemotingClient, group: str, data: BrokerData) -> GroupObservation:
    master = data.master_addr
    if master is None:
        raise BackupError(
            f"{group}: no master is registered with the name servers; rule: a backup reads each group from its "
            "master; fix: back up once the group has a master (`local status`, `kubectl get brokergroups`)"
        )
    topics = TopicAdmin(client)
    auth = AuthAdmin(client)
    try:
        table = await topics.topics(master, timeout=ADMIN_TIMEOUT_S)
        subscriptions = await topics.subscription_group_configs(master, timeout=ADMIN_TIMEOUT_S)
        config = await client.get_broker_config(master, timeout=ADMIN_TIMEOUT_S)
        users = acls = None
        if has_user_store(config):
            users = [user_from_broker(u) for u in await auth.list_users(master, timeout=ADMIN_TIMEOUT_S)]
            acls = [acl_from_broker(a) for a in await auth.list_acls(master, timeout=ADMIN_TIMEOUT_S)]
    except (RemotingException, OSError) as exc:
        raise BackupError(f"{group}: reading its master {master} failed: {_why(exc)}") from None
    except ValueError as exc:  # an answer that does not fit the document (pydantic)
        raise BackupError(f"{group}: its master {master} answered what a backup cannot hold: {exc}") from None
    return GroupObservation(
        group=group,
        master=master,
        topics={name: topic_entry(t) for name, t in table.items()},
        subscription_groups=subscriptions,
        users=users,
        acls=acls,
    )


async def take_backup(
    client: RemotingClient, *, cluster: str | None, taken_at: str, tool: str, namesrv: Sequence[str] = ()
) -> MetadataBackup:
    """The document of the cluster's metadata, read from every group's master (found through ``namesrv``, else
    the client's name servers)."""
    name, groups = await cluster_groups(client, cluster, namesrv=namesrv)
    observations = [await _read_group(client, group, data) for group, data in sorted(groups.items())]
    source = BackupSource(name_servers=list(namesrv or client.namesrv_addrs), taken_at=taken_at, tool=tool)
    return build_backup(name, source, observations)


# Restore -------------------------------------------------------------------------------------------------------


async def _replica_auth(client: RemotingClient, addr: str) -> ReplicaAuth:
    auth = AuthAdmin(client)
    try:
        if not has_user_store(await client.get_broker_config(addr, timeout=ADMIN_TIMEOUT_S)):
            return ReplicaAuth()
        users = {u.username: u for u in map(user_from_broker, await auth.list_users(addr, timeout=ADMIN_TIMEOUT_S))}
        acls = {a.subject: a for a in map(acl_from_broker, await auth.list_acls(addr, timeout=ADMIN_TIMEOUT_S))}
    except (RemotingException, OSError, ValueError) as exc:
        return ReplicaAuth(error=f"reading its users failed: {_why(exc)}")
    return ReplicaAuth(users, acls)


async def observe_target(client: RemotingClient, group: str, data: BrokerData, with_auth: bool) -> TargetGroup:
    """One target group: its master's tables, and (``with_auth``) every replica's users and ACLs."""
    replicas: dict[str, ReplicaAuth] = {}
    if with_auth:
        for _, addr in sorted(data.broker_addrs.items()):  # id 0, the master, first
            replicas[addr] = await _replica_auth(client, addr)
    master = data.master_addr
    if master is None:
        return TargetGroup(group, None, replicas=replicas, error="no master is registered with the name servers")
    admin = TopicAdmin(client)
    try:
        table = await admin.topics(master, timeout=ADMIN_TIMEOUT_S)
        subscriptions = await admin.subscription_group_configs(master, timeout=ADMIN_TIMEOUT_S)
    except (RemotingException, OSError, ValueError) as exc:
        return TargetGroup(group, master, replicas=replicas, error=f"its master {master} did not answer: {_why(exc)}")
    return TargetGroup(
        group,
        master,
        topics={name: topic_entry(t) for name, t in table.items()},
        subscription_groups=subscriptions,
        replicas=replicas,
    )


async def observe_targets(
    client: RemotingClient, groups: Mapping[str, BrokerData], wanted: Sequence[str], with_auth: bool
) -> dict[str, TargetGroup]:
    return {g: await observe_target(client, g, groups[g], with_auth) for g in sorted(wanted) if g in groups}


def _user_body(user: UserEntry) -> dict[str, str]:
    return {
        "username": user.username,
        "password": user.password,
        "userType": user.user_type,
        "userStatus": user.user_status,
    }


def _acl_body(acl: AclDoc) -> dict[str, object]:
    body: dict[str, object] = acl.model_dump(mode="json", by_alias=True)
    return body


async def write_step(client: RemotingClient, step: RestoreStep) -> None:
    """Send what one step writes (its address: the master for topics and subscription groups, a replica for users
    and ACLs)."""
    addr = step.address
    if addr is None:
        raise ValueError(f"{step.kind} {step.name}: no address to write to")
    if step.kind is StepKind.TOPIC and step.topic is not None:
        await TopicAdmin(client).create_topic(
            addr,
            topic_config(step.name, step.topic),
            removed_attributes=step.removed_attributes,
            timeout=ADMIN_TIMEOUT_S,
        )
    elif step.kind is StepKind.SUBSCRIPTION_GROUP and step.subscription_group is not None:
        await TopicAdmin(client).put_subscription_group_config(addr, step.subscription_group, timeout=ADMIN_TIMEOUT_S)
    elif step.kind is StepKind.USER and step.user is not None:
        auth = AuthAdmin(client)
        if step.outcome is Outcome.CREATE:
            await auth.create_user(addr, _user_body(step.user), timeout=ADMIN_TIMEOUT_S)
        else:
            await auth.update_user(addr, _user_body(step.user), timeout=ADMIN_TIMEOUT_S)
    elif step.kind is StepKind.ACL and step.acl is not None:
        auth = AuthAdmin(client)
        if step.acl_create:
            await auth.create_acl(addr, _acl_body(step.acl), timeout=ADMIN_TIMEOUT_S)
        else:
            await auth.update_acl(addr, _acl_body(step.acl), timeout=ADMIN_TIMEOUT_S)


@dataclass
class RestoreReport:
    cluster: str
    steps: list[RestoreStep] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # one line per write that failed
    missing: list[RestoreStep] = field(default_factory=list)  # after the writes: what is still not there
    dry_run: bool = False

    @property
    def ok(self) -> bool:
        return not self.errors and not self.missing


async def restore(
    client: RemotingClient,
    backup: MetadataBackup,
    *,
    cluster: str | None,
    every_group: bool,
    overwrite: bool,
    dry_run: bool = False,
) -> RestoreReport:
    """Put ``backup`` onto the cluster the client's name servers serve (see the module doc)."""
    name, groups = await cluster_groups(client, cluster, fallback=backup.cluster)
    placement = placements(backup, sorted(groups), every_group, name)
    with_auth = any(c.users or c.acls for c in placement.groups.values())
    wanted = sorted(placement.groups)
    targets = await observe_targets(client, groups, wanted, with_auth)
    report = RestoreReport(name, plan_restore(placement, targets, overwrite), dry_run=dry_run)
    if dry_run:
        report.missing = [s for s in report.steps if s.outcome is Outcome.REFUSED]
        return report
    for step in report.steps:
        if not step.write:
            continue
        try:
            await write_step(client, step)
        except (RemotingException, OSError, ValueError) as exc:
            where = step.group + (f" ({step.address})" if step.address else "")
            report.errors.append(f"{step.kind} {step.name} on {where}: not written: {_why(exc)}")
    # What the target holds now, planned again without overwriting: anything still to create did not take.
    after = await observe_targets(client, groups, wanted, with_auth)
    report.missing = restore_failed(plan_restore(placement, after, overwrite=False))
    return report
