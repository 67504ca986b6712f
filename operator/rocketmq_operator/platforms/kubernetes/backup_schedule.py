"""Scheduled metadata backups on Kubernetes: the ControllerGroup pass's step that runs `control.backup.take_backup`
when `core.backup_schedule` says one is due, and writes it into a Secret.

Contract: `scheduled_backup(kube, client, cg, resource, now)` returns the `status.backup` to write (None: the group has
no spec.backup and never had one). When a backup is due it reads the cluster's metadata through the group's own
name servers (the operator's client signs each broker's requests as its group's admin and trusts the cluster's
authority, as the group passes set it up), applies the Secret `<group>-metadata-<i>` (key `metadata.json`, the
document `rocketmq-operator backup` writes; labels `rocketmq-operator.dev/group` and
`rocketmq-operator.dev/backup=metadata`; no owner, so the backups outlive the ControllerGroup), and posts an Event
(`MetadataBackup`, or `MetadataBackupFailed` with the reason and the fix). A failure never raises out of the pass:
it is in status.backup.lastError and tried again a minute later. The document holds the users' passwords: it is
written to a Secret only, never logged, never put in an Event or the status (which hold counts).
"""

from __future__ import annotations

import base64
import logging
import time
from typing import Any

import kopf

from rocketmq_operator import __version__
from rocketmq_operator.api.models import ControllerGroup, KeptBackup, MetadataBackupStatus
from rocketmq_operator.control.backup import take_backup
from rocketmq_operator.control.clock import now_iso
from rocketmq_operator.core.backup import BackupError, MetadataBackup
from rocketmq_operator.core.backup_schedule import (
    BACKUP_KEY,
    BACKUP_REQUEST_ANNOTATION,
    after_failure,
    after_success,
    backup_due,
)
from rocketmq_operator.platforms.kubernetes.kube import KubeClient, KubeError
from rocketmq_operator.remoting import RemotingClient
from rocketmq_operator.render.kubernetes import LABEL_GROUP, name_server_addresses

JSON = dict[str, Any]
log = logging.getLogger("rocketmq_operator.kubernetes.backup")

SECRET_LIMIT_BYTES = 1024 * 1024
"""Kubernetes refuses a Secret whose data exceeds 1 MiB."""
BACKUP_LABEL = "rocketmq-operator.dev/backup"


def backup_secret(cg: ControllerGroup, namespace: str, name: str, backup: MetadataBackup, text: str) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {
                "app.kubernetes.io/managed-by": "rocketmq-operator",
                LABEL_GROUP: cg.metadata.name,
                BACKUP_LABEL: "metadata",
            },
            "annotations": {
                "rocketmq-operator.dev/taken-at": backup.source.taken_at,
                "rocketmq-operator.dev/cluster": backup.cluster,
            },
        },
        "type": "Opaque",
        "data": {BACKUP_KEY: base64.b64encode(text.encode()).decode()},
    }


def kept_entry(secret: str, backup: MetadataBackup) -> KeptBackup:
    groups = backup.groups.values()
    return KeptBackup(
        secret=secret,
        taken_at=backup.source.taken_at,
        cluster=backup.cluster,
        topics=sum(len(g.topics) for g in groups),
        subscription_groups=sum(len(g.subscription_groups) for g in groups),
        users=sum(len(g.users or []) for g in groups),
    )


async def scheduled_backup(
    kube: KubeClient, client: RemotingClient, cg: ControllerGroup, resource: kopf.Body, now: float | None = None
) -> MetadataBackupStatus | None:
    body: JSON = dict(resource)
    raw = (body.get("status") or {}).get("backup")
    status = MetadataBackupStatus.model_validate(raw) if raw else None
    spec = cg.spec.backup
    if spec is None:
        return status  # what was kept stays listed; nothing more is taken
    ns, name = str(cg.metadata.namespace), cg.metadata.name
    requested = (body["metadata"].get("annotations") or {}).get(BACKUP_REQUEST_ANNOTATION)
    due = backup_due(name, spec, status, requested, time.time() if now is None else now)
    if due is None:
        return status
    attempted = now_iso()
    try:
        backup = await take_backup(
            client,
            cluster=spec.cluster_name,
            taken_at=attempted,
            tool=f"rocketmq-operator {__version__} (spec.backup of ControllerGroup {ns}/{name})",
            namesrv=name_server_addresses(cg, ns),
        )
        text = backup.to_text()
        if len(text.encode()) > SECRET_LIMIT_BYTES:
            raise BackupError(
                f"the backup of cluster {backup.cluster} is {len(text.encode())} bytes; rule: a Secret holds at most "
                f"1 MiB; fix: take it into a file with `rocketmq-operator backup` (docs/backup.md) and remove "
                "spec.backup"
            )
        await kube.apply(backup_secret(cg, ns, due.secret, backup, text))
    except (BackupError, KubeError) as exc:
        error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        kopf.warn(resource, reason="MetadataBackupFailed", message=f"{due.reason} backup: {error}")
        log.warning("ControllerGroup %s/%s: %s backup failed: %s", ns, name, due.reason, error)
        return after_failure(status, error, attempted, requested)
    entry = kept_entry(due.secret, backup)
    kopf.info(
        resource,
        reason="MetadataBackup",
        message=f"{due.reason} backup of cluster {entry.cluster} into Secret {due.secret}: {entry.topics} topic(s), "
        f"{entry.subscription_groups} subscription group(s), {entry.users} user(s)",
    )
    return after_success(name, spec, status, entry, attempted, requested)
