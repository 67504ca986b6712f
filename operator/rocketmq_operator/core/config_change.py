"""What a change of a BrokerGroup needs: nothing, a hot config update, or a rolling restart. Pure.

Contract:

* `HOT_BROKER_KEYS`: broker keys RocketMQ applies at runtime through UPDATE_BROKER_CONFIG. `Configuration.update`
  sets *every* key on the config objects, but only fields the broker reads again on use take effect; these are
  the ones read on every put, pull, heartbeat or cleanup pass (apache/rocketmq `CommitLog` for the quorum keys,
  `PullMessageProcessor` for `slaveReadEnable`, `DefaultMessageStore.CleanCommitLogService` for retention,
  `ReplicasManager.sendHeartbeatToController` for the heartbeat keys; see the "Runtime?" columns of the project's
  RocketMQ facts). Every other key (ports, paths, identities, `flushDiskType`, mapped file sizes, the HA service
  class) is fixed when the broker starts: restart-only. `brokerPermission` is the operator's fence, never the
  user's hot key (the switchover's fence also sets `minInSyncReplicas` and `haSendHeartbeatInterval` for its
  duration, and gives them back).
* `revision(conf, version, argv_extra)`: the revision a replica runs: a digest of its version and its
  restart-only keys (hot keys are left out: a hot change keeps every revision).
* `classify(old, new)`: the keys that changed, split into hot and restart-only.
* `describe_change(...)`: what a change of one group needs, in one line (`render.diff.describe_manifests` says
  it for every BrokerGroup of two manifests: `explain --diff OLD NEW` / `render --diff OLD NEW`).
* `downgrade_warning(old_version, new_version)`: the one-line warning for a spec.version that goes back, None
  otherwise (said by `explain --diff` and `local apply`); `running_downgrade_warning(reported, new_version)` the
  same from the versions the brokers report running (said by the Kubernetes operator, which has no old spec).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

HOT_BROKER_KEYS: frozenset[str] = frozenset(
    {
        # quorum, read on every put (CommitLog.handleHA / calcNeedAckNums, GroupTransferService)
        "inSyncReplicas",
        "minInSyncReplicas",
        "enableAutoInSyncReplicas",
        "allAckInSyncStateSet",
        "haMaxGapNotInSync",
        "haMaxTimeSlaveNotCatchup",
        "slaveTimeout",
        "syncFlushTimeout",
        "syncFromLastFile",
        "readUnCommitted",
        # reads (PullMessageProcessor, DefaultMessageStore.getMessage)
        "slaveReadEnable",
        "accessMessageInMemoryMaxRatio",
        # retention (CleanCommitLogService, every pass)
        "diskMaxUsedSpaceRatio",
        "fileReservedTime",
        "deleteWhen",
        "diskSpaceWarningLevelRatio",
        "diskSpaceCleanForciblyRatio",
        # sent with every controller heartbeat
        "controllerHeartBeatTimeoutMills",
        "brokerElectionPriority",
        # HA heartbeat, read on every loop of AutoSwitchHAClient and AutoSwitchHAConnection (also the fence's)
        "haSendHeartbeatInterval",
        # NettyClientConfig, read on every timed-out request (NettyRemotingClient.invokeSync; the broker's
        # Configuration holds the same object its outer API client uses)
        "clientCloseSocketIfTimeout",
    }
)


@dataclass(frozen=True)
class ConfigChange:
    hot: dict[str, str] = field(default_factory=dict)  # key -> new value (removed keys are not hot)
    restart: tuple[str, ...] = ()  # restart-only keys that changed (added, removed or new value)

    @property
    def empty(self) -> bool:
        return not self.hot and not self.restart


def classify(old: Mapping[str, str], new: Mapping[str, str]) -> ConfigChange:
    hot: dict[str, str] = {}
    restart: list[str] = []
    for key in sorted(set(old) | set(new)):
        if old.get(key) == new.get(key):
            continue
        if key in HOT_BROKER_KEYS and key in new:
            hot[key] = new[key]
        else:
            restart.append(key)
    return ConfigChange(hot, tuple(restart))


def revision(conf: Mapping[str, str], version: str, extra: Sequence[str] = ()) -> str:
    """A short digest of what a restart would change: version, restart-only keys, extra JVM options."""
    fixed = {k: v for k, v in conf.items() if k not in HOT_BROKER_KEYS}
    text = json.dumps({"version": version, "conf": fixed, "extra": list(extra)}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def group_revision(revisions: Sequence[str]) -> str:
    return hashlib.sha256("|".join(sorted(revisions)).encode()).hexdigest()[:12]


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) if part.isdigit() else 0 for part in version.split("."))


def downgrade_warning(old_version: str, new_version: str) -> str | None:
    """A roll to an older RocketMQ is done like any other, but nothing promises the older broker can read what the
    newer one wrote (commit log, consume queues, timer and config files): say so before it happens."""
    if _version_key(new_version) >= _version_key(old_version):
        return None
    return (
        f"spec.version {old_version} -> {new_version} is a downgrade: RocketMQ does not promise that an older "
        "version reads the stores a newer one wrote; back up the data, or keep the newer version"
    )


def version_of_desc(desc: str | None) -> str | None:
    """RocketMQ's `brokerVersionDesc` as a running broker reports it (`V5_5_0`) spelt as spec.version is
    (`5.5.0`); None when it is not such a version."""
    if not desc or not desc.startswith("V"):
        return None
    parts = desc[1:].split("_")[:3]
    return ".".join(parts) if len(parts) == 3 and all(p.isdigit() for p in parts) else None


def running_downgrade_warning(running: Iterable[str | None], new_version: str) -> str | None:
    """`downgrade_warning` from the newest version the group's brokers report running (`brokerVersionDesc`) to
    ``new_version``: on Kubernetes the spec before the change is gone, what runs is the truth."""
    versions = [v for v in map(version_of_desc, running) if v is not None]
    if not versions:
        return None
    return downgrade_warning(max(versions, key=_version_key), new_version)


def describe_change(
    old_version: str,
    new_version: str,
    old_confs: Sequence[Mapping[str, str]],
    new_confs: Sequence[Mapping[str, str]],
    old_extra: Sequence[str] = (),
    new_extra: Sequence[str] = (),
    strategy: str = "switchover",
) -> str:
    """'no change', 'hot: k=v, ...', or 'rolling restart of N replicas, one switchover (...why)'."""
    if len(old_confs) != len(new_confs):
        return f"scale from {len(old_confs)} to {len(new_confs)} replicas (not a roll)"
    changes = [classify(o, n) for o, n in zip(old_confs, new_confs, strict=True)]
    why: list[str] = []
    if old_version != new_version:
        why.append(f"version {old_version} -> {new_version}")
    if list(old_extra) != list(new_extra):
        why.append("jvm options")
    restart_keys = sorted({k for c in changes for k in c.restart})
    if restart_keys:
        why.append("restart-only keys " + ", ".join(restart_keys))
    hot = {k: v for c in changes for k, v in c.hot.items()}
    if why:
        n = len(new_confs)
        master = "one switchover" if strategy != "restart" else "no switchover (strategy restart)"
        text = f"rolling restart of {n} replicas, {master} ({'; '.join(why)})"
        if hot:
            text += "; hot keys applied on the way: " + ", ".join(sorted(hot))
        return text
    if hot:
        return "hot: " + ", ".join(f"{k}={v}" for k, v in sorted(hot.items())) + " (no restart)"
    return "no change"
