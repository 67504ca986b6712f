"""`local apply -f`: the user's command that changes a running local cluster (a roll, a scale, hot keys).

Contract:

* `apply(files, state_dir)` (`local apply -f`): validate, render with the running ports, write the configs, hand
  the new desired state to the supervisor (request `apply`), then send hot keys to the running brokers and read
  them back (`lifecycle.roll.apply_hot_config`). Prints what the change needs (`describe_change`), the spec.jvm
  sizes it does not apply (`placement.jvm_not_applied`) and the Topics and ConsumerGroups added, changed or
  removed (`render.diff.describe_topic_changes`: the supervisor's `TopicPolicy` asserts what the new resources
  declare), the Users added, changed or removed (`users.describe_user_changes`: the supervisor's `AuthPolicy`
  asserts them on every replica, and deletes a removed one whose deletionPolicy was Delete, with no restart) and
  where the password of a User added without spec.passwordSecret was generated; warns of a downgrade
  (`render.diff.diff_warnings`). Scaling outside controller mode is refused (a
  Proxy's replicas too). A changed Proxy rolls its proxies one at a time (`platforms.local.proxy_roll`); with one
  replica its restart leaves no proxy serving for a while, which is said in a warning, not refused. A restart of
  a ControllerGroup or a classic-mode BrokerGroup is refused.
  Nothing running (or never started) exits 3 (`lifecycle.not_running`).
* The supervisor's side of the roll it starts is `platforms.local.roll`; this module runs in the user's process
  and talks to the supervisor only through its requests (`lifecycle.request`).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from rocketmq_operator.api.models import AnyResource, BrokerGroup, ControllerGroup
from rocketmq_operator.control.roll import (
    apply_hot_config,
)
from rocketmq_operator.core.config_change import classify, describe_change
from rocketmq_operator.core.proxy_roll import describe_proxy_change, proxy_config_keys
from rocketmq_operator.platforms.local import lifecycle
from rocketmq_operator.platforms.local.auth import (
    AuthSecretError,
    read_secrets,
    record_admins,
    refuse_admin_change,
    select_secrets,
    state_client,
    store_secrets,
)
from rocketmq_operator.platforms.local.distribution import ROCKETMQ_VERSION
from rocketmq_operator.platforms.local.group_drain import remove_groups, write_drain_record
from rocketmq_operator.platforms.local.layout import StateLayout
from rocketmq_operator.platforms.local.placement import (
    PlacementError,
    check_names,
    jvm_not_applied,
    load_resources,
    manifest_digest,
    port_needs,
    render_configs,
)
from rocketmq_operator.platforms.local.ports import allocate, port_is_free, seed_for
from rocketmq_operator.platforms.local.report import supervisor_running
from rocketmq_operator.platforms.local.roll import (
    desired_state,
    versions_of,
    write_configs,
)
from rocketmq_operator.platforms.local.state import (
    LocalState,
    StateError,
)
from rocketmq_operator.platforms.local.tls import TlsConfigError, check_tls, ensure_certificates, tls_groups
from rocketmq_operator.platforms.local.users import (
    describe_user_changes,
    generated_password_lines,
    with_generated_passwords,
)
from rocketmq_operator.remoting import parse_properties_text
from rocketmq_operator.render.diff import describe_topic_changes, diff_warnings


def _stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def apply(files: Sequence[str], state_dir: Path, *, out: Any = print, force: bool = False) -> int:
    """`local apply`: ``force`` lets a BrokerGroup the manifests no longer have go with what it holds unconsumed
    (otherwise it is drained first, and its removal refused while its consumers have not read it)."""
    layout = StateLayout(state_dir)
    try:  # first: a stopped cluster is the one thing to say (not the manifests' warnings before it)
        existing = lifecycle.read_existing(layout)
        if not supervisor_running(existing):
            raise lifecycle.not_running(layout, existing)
    except lifecycle.NotRunning as exc:
        _stderr(f"error: {exc}")
        return lifecycle.EXIT_STOPPED
    except StateError as exc:
        _stderr(f"error: {exc}")
        return lifecycle.EXIT_FAILED
    resources, errors, warnings, secrets = lifecycle.validate(files)
    for w in warnings:
        _stderr(f"warning: {w}")
    if errors:
        for e in errors:
            out(e)
        return lifecycle.EXIT_INVALID
    try:
        check_names(resources)
        auth_secrets = select_secrets(resources, secrets)
        # A running group's admin is what its brokers started with (a state directory from before admins.json:
        # the Secrets stored then); a new password under that name is refused, a new name is rotated to.
        record_admins(layout, load_resources(existing), read_secrets(layout))
        refuse_admin_change(layout, resources, auth_secrets)
        check_tls(resources)
        if bool(tls_groups(resources)) != bool(tls_groups(load_resources(existing))):
            raise TlsConfigError(
                "spec.tls.enabled changes; rule: a running local cluster cannot switch TLS on or off (a rolling "
                "switch would leave TLS and plain-text processes unable to reach each other); fix: "
                f"`rocketmq-operator local down --state-dir {layout.root}`, then `local up` with the new manifests"
            )
        mutual_now = {n for n, g in tls_groups(load_resources(existing)).items() if g.spec.tls.mutual}
        if tls_groups(resources) and {n for n, g in tls_groups(resources).items() if g.spec.tls.mutual} != (
            mutual_now & set(tls_groups(resources))
        ):
            raise TlsConfigError(
                "spec.tls.clientAuth changes; rule: a running local cluster cannot switch mutual TLS on or off (a "
                "rolling switch would leave processes that require client certificates refusing those that present "
                f"none); fix: `rocketmq-operator local down --state-dir {layout.root}`, then `local up` with the "
                "new manifests"
            )
        ports = _ports_with_new_replicas(existing, resources, layout)
        texts = render_configs(resources, ports, layout)
        _refuse_unscalable(existing, texts, resources)
        state = desired_state(resources, ports, layout, files=_abs(files), texts=texts, log=_stderr)
        _refuse_unrollable(existing, state)
        summary = _summary(existing, state, resources, layout, texts)
        for w in [*diff_warnings(load_resources(existing), resources), *_single_proxy_warnings(existing, state)]:
            _stderr(f"warning: {w}")
        running = {g.name for g in existing.groups}
        for r in resources:  # a group added again under the name of one removed before: its old drain is history
            if isinstance(r, BrokerGroup) and r.metadata.name not in running:
                write_drain_record(layout, r.metadata.name, None)
        removed_groups = _removed_groups(existing, resources)
        if removed_groups:
            refusals = asyncio.run(remove_groups(existing, layout, removed_groups, forced=force, say=out))
            if refusals:
                for line in refusals:
                    _stderr(f"error: {line}")
                return lifecycle.EXIT_FAILED
        write_configs(layout, state, texts, existing)
        # Before the request: the supervisor's new AuthPolicy reads the passwords of the Users it now asserts.
        stored, generated = with_generated_passwords(resources, auth_secrets, read_secrets(layout))
        store_secrets(layout, stored)
        record_admins(layout, resources, stored)  # a group added now starts with its Secret's admin
        ensure_certificates(layout, state)  # a scale-out's new replicas
        answer = asyncio.run(
            lifecycle.request(
                layout,
                "apply",
                resources=state.resources,
                manifestDigest=manifest_digest(resources),
                files=state.files,
                replicas={r.name: {"argv": r.argv, "revision": r.target_revision} for r in state.replicas},
                added=[r.to_json() for r in state.replicas if existing.replica(r.name) is None],
                removed=sorted({r.name for r in existing.replicas} - {r.name for r in state.replicas}),
                groups=[g.to_json() for g in state.groups],
            )
        )
        if not answer.get("ok"):
            raise lifecycle.LocalError(str(answer.get("message")))
        layout.manifest.write_text(  # what runs now, as `local up` keeps it
            yaml.safe_dump_all(state.resources, sort_keys=False, default_flow_style=False), encoding="utf-8"
        )
        out(summary)
        for line in generated_password_lines(generated, layout):
            out(line)
        hot = _hot_changes(existing, texts, layout)
        if hot:
            for line in asyncio.run(_apply_hot(existing, hot)):
                out(line)
        return lifecycle.EXIT_OK
    except (PlacementError, AuthSecretError, TlsConfigError) as exc:
        out(str(exc))
        return lifecycle.EXIT_INVALID
    except lifecycle.NotRunning as exc:  # the supervisor exited while the request waited
        _stderr(f"error: {exc}")
        return lifecycle.EXIT_STOPPED
    except (lifecycle.LocalError, StateError, OSError) as exc:
        _stderr(f"error: {exc}")
        return lifecycle.EXIT_FAILED


def _removed_groups(existing: LocalState, resources: Sequence[AnyResource]) -> list[str]:
    """BrokerGroups that run and the new manifests no longer have."""
    wanted = {r.metadata.name for r in resources if isinstance(r, BrokerGroup)}
    return sorted(g.name for g in existing.groups if g.kind == "BrokerGroup" and g.name not in wanted)


def _ports_with_new_replicas(
    existing: LocalState, resources: Sequence[AnyResource], layout: StateLayout
) -> dict[str, int]:
    """The running ports, plus a free block for replicas a scale-out adds."""

    ports = existing.ports()
    new = [n for n in port_needs(resources) if n.key not in ports]
    if new:
        taken = set(ports.values())
        ports.update(
            allocate(new, seed_for(f"{layout.root}+{len(ports)}"), lambda p: p not in taken and port_is_free(p))
        )
    return ports


def _refuse_unscalable(existing: LocalState, texts: Mapping[str, str], resources: Sequence[AnyResource] = ()) -> None:
    """Scaling of controller-mode BrokerGroups only (the SyncStateSet drives it); a controller-mode BrokerGroup
    may also be added whole (started like `local up` starts one), or removed whole (drained first:
    `group_drain.remove_groups`)."""
    names = {r.name for r in existing.replicas}
    rollable = {g.name for g in existing.groups if g.kind == "BrokerGroup" and g.controller_mode}
    running = {g.name for g in existing.groups}
    rollable |= {
        r.metadata.name
        for r in resources
        if isinstance(r, BrokerGroup) and r.metadata.name not in running and r.spec.controller_ref is not None
    }
    changed = sorted(n for n in set(texts) ^ names if n.rsplit("-", 1)[0] not in rollable)
    if changed:
        raise lifecycle.LocalError(
            f"replicas {changed} would be added or removed outside a controller-mode BrokerGroup: `local apply` "
            "scales controller-mode BrokerGroups only; fix: `local down` and `local up` with the new manifest"
        )


def _refuse_unrollable(existing: LocalState, state: LocalState) -> None:
    """Broker rolls go through the controller's SyncStateSet: controller-mode BrokerGroups only, for now; a
    Proxy's processes roll one at a time (`platforms.local.proxy_roll`). ControllerGroups do not roll yet."""
    rollable = {g.name for g in existing.groups if g.kind == "BrokerGroup" and g.controller_mode}
    for r in state.replicas:
        old = existing.replica(r.name)
        if old is None or old.revision == r.target_revision or not old.revision or r.group in rollable:
            continue
        if r.kind == "Proxy":
            continue
        what = "ControllerGroup" if r.kind == "ControllerGroup" else "BrokerGroup (not controller mode)"
        raise lifecycle.LocalError(
            f"{what} {r.group}: replica {r.name} would need a restart (version or restart-only config), and "
            "`local apply` rolls only controller-mode BrokerGroups and Proxies; fix: change only hot keys there, "
            "or `local down` and `local up` with the new manifest"
        )


def _abs(files: Sequence[str]) -> list[str]:
    return [str(Path(f).resolve()) if f != "-" else "-" for f in files]


def _running_text(layout: StateLayout, name: str) -> str:
    try:
        return layout.config(name).read_text(encoding="utf-8")
    except OSError:
        return ""


def _summary(
    existing: LocalState,
    state: LocalState,
    resources: Sequence[AnyResource],
    layout: StateLayout,
    texts: Mapping[str, str],
) -> str:
    old_resources = load_resources(existing)
    old_versions = versions_of(old_resources)
    new_versions = versions_of(resources)
    old_groups = {r.metadata.name: r for r in old_resources if isinstance(r, BrokerGroup | ControllerGroup)}
    new_groups = {r.metadata.name: r for r in resources if isinstance(r, BrokerGroup | ControllerGroup)}
    strategies = {r.metadata.name: r.spec.upgrade.strategy for r in resources if isinstance(r, BrokerGroup)}
    lines: list[str] = []
    for group in sorted({r.group for r in state.replicas}):
        if any(r.kind == "Proxy" for r in state.replicas if r.group == group):
            lines.append(f"{group}: {_proxy_change(existing, state, group, layout, texts, old_versions, new_versions)}")
            continue
        added = [r.name for r in state.replicas if r.group == group and existing.replica(r.name) is None]
        replicas = [r for r in state.replicas if r.group == group and existing.replica(r.name) is not None]
        old_confs = [parse_properties_text(_running_text(layout, r.name)) for r in replicas]
        new_confs = [parse_properties_text(texts[r.name]) for r in replicas]
        old_argv = [a for r in replicas if (o := existing.replica(r.name)) for a in o.argv]
        new_argv = [a for r in replicas for a in (r.target_argv or r.argv)]
        text = describe_change(
            old_versions.get(group, ROCKETMQ_VERSION),
            new_versions.get(group, ROCKETMQ_VERSION),
            old_confs,
            new_confs,
            old_argv if old_versions.get(group) == new_versions.get(group) else [],
            new_argv if old_versions.get(group) == new_versions.get(group) else [],
            strategies.get(group, "switchover"),
        )
        if added:
            text = f"scale out: start {', '.join(added)}, then " + text.replace("no change", "nothing else")
        removed = [r.name for r in existing.replicas if r.group == group and state.replica(r.name) is None]
        if removed:
            text = (
                f"scale in: remove {', '.join(removed)} one at a time (a switchover first if one is master), then "
                + text.replace("no change", "nothing else")
            )
        lines.append(f"{group}: {text}")
        if group in old_groups and group in new_groups:
            lines.extend(f"{group}: {note}" for note in jvm_not_applied(old_groups[group], new_groups[group]))
    lines.extend(
        # The local TopicPolicy asserts what is declared and deletes nothing.
        f"{line} (no longer asserted; it stays on the brokers)" if line.endswith(": removed") else line
        for line in describe_topic_changes(old_resources, resources)
    )
    lines.extend(describe_user_changes(old_resources, resources))
    return "\n".join(lines)


def _proxy_change(
    existing: LocalState,
    state: LocalState,
    group: str,
    layout: StateLayout,
    texts: Mapping[str, str],
    old_versions: Mapping[str, str],
    new_versions: Mapping[str, str],
) -> str:
    """What a Proxy's change needs: nothing, or a roll of its proxies one at a time (`core.proxy_roll`)."""
    replicas = [r for r in state.replicas if r.group == group]
    olds = [o for r in replicas if (o := existing.replica(r.name)) is not None]
    return describe_proxy_change(
        old_versions.get(group, ROCKETMQ_VERSION),
        new_versions.get(group, ROCKETMQ_VERSION),
        [proxy_config_keys(_running_text(layout, o.name)) for o in olds],
        [proxy_config_keys(texts[r.name]) for r in replicas],
        [a for o in olds for a in o.argv],
        [a for r in replicas for a in (r.target_argv or r.argv)],
    )


def _single_proxy_warnings(existing: LocalState, state: LocalState) -> list[str]:
    """A Proxy of one replica that must restart: no proxy serves until it is back (said, not refused)."""
    out: list[str] = []
    for group in sorted({r.group for r in state.replicas if r.kind == "Proxy"}):
        replicas = [r for r in state.replicas if r.group == group]
        pending = [r.name for r in replicas if (o := existing.replica(r.name)) and o.revision != r.target_revision]
        if len(replicas) == 1 and pending:
            out.append(
                f"Proxy/{group}: spec.replicas is 1, so restarting {pending[0]} leaves no proxy serving gRPC clients "
                "until it is back (a few seconds); fix for next time: spec.replicas 2 or more, rolled one at a time"
            )
    return out


def _hot_changes(existing: LocalState, texts: Mapping[str, str], layout: StateLayout) -> dict[str, dict[str, str]]:
    """Broker address -> hot keys that changed (compared with the config it runs)."""
    del layout
    out: dict[str, dict[str, str]] = {}
    for r in existing.replicas:
        if r.kind != "BrokerGroup" or r.name not in texts:
            continue
        running = (
            parse_properties_text(Path(r.run_config).read_text(encoding="utf-8")) if Path(r.run_config).exists() else {}
        )
        change = classify(running, parse_properties_text(texts[r.name]))
        if change.hot:
            out[r.address] = change.hot
    return out


async def _apply_hot(existing: LocalState, hot: Mapping[str, Mapping[str, str]]) -> list[str]:
    lines: list[str] = []
    async with state_client(existing) as client:
        for addr, changes in hot.items():
            result = await apply_hot_config(client, [addr], changes)
            if result.ok:
                lines.append(f"hot: {addr} {json.dumps(dict(changes), sort_keys=True)} applied and read back")
            else:
                lines.append(
                    f"hot: {addr} not applied now ({result.failed[addr]}); it takes the config at its next start"
                )
    return lines
