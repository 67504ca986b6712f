"""`kubectl rocketmq`: the cluster-facing CLI (console script `kubectl-rocketmq`, a kubectl plugin).

It never talks to a broker: it reads what the operator wrote (a BrokerGroup's status, its conditions, Events)
and asks the operator for an operation the way GitOps would, through the annotations its group pass honours
(`render.kubernetes.names`), so every operation is the operator's one implementation.

* `status GROUP [-o table|json] [--watch S]`: the view of `local status` (`core.status_view`) built from the
  BrokerGroup's `.status` and its pods (phase, readiness, restarts). A group that does not exist is one line and
  exit 1.
* `switchover GROUP --to REPLICA|auto [--wait S]`: sets `rocketmq-operator.dev/switchover-to` to the replica (pod
  name, or broker id; `auto` = the most caught-up alive in-sync slave in status) and waits for the operator to
  clear it; prints the `Switchover` condition it records as one line (exit 1 when refused).
* `fence REPLICA` / `unfence REPLICA`: adds the replica to / removes it from the group's
  `rocketmq-operator.dev/fence` annotation and waits until `status.fenced` says it is done.
* `restart GROUP`: stamps `rocketmq-operator.dev/restartedAt` on the StatefulSet's pod template: a new revision,
  which the operator's roll restarts one replica at a time (slaves first, the master last after a switchover).
* `drain-group GROUP [--undo] [--wait S]`: spec.draining on (off), and with --wait until status.drain says drained.
* `backup CONTROLLERGROUP [--wait S]`: sets `rocketmq-operator.dev/backup-now`, which the operator answers with a
  metadata backup into the ring of Secrets of spec.backup, and waits for status.backup to say so (exit 1 when it
  failed, with the reason).
* `rotate-ca [--overlap D] [--wait S]`: sets `rocketmq-operator.dev/rotate` (and the overlap) on the namespace's
  authority Secret, which the operator answers by replacing the authority with no moment of distrust
  (`platforms.kubernetes.tls`); with --wait until it has started, printing the state it records. It reads the
  Secret's metadata only.
* `report GROUP [-o FILE]`: a tarball for a bug report (`cli.kubectl_report`); never a Secret.

kubectl's conventions: `--kubeconfig`, `--context`, `-n/--namespace` (before or after the subcommand) and
`KUBECONFIG`; see `cli.kubectl_api.resolve`. Exit codes: 0 done, 1 the operation failed or was refused (or the
group does not exist), 2 bad usage or no usable cluster credentials.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from rich.console import Console

from rocketmq_operator.cli.arguments import add_overlap_argument
from rocketmq_operator.cli.kubectl_view import group_document, now_iso, render_status
from rocketmq_operator.core.backup_schedule import BACKUP_KEY, BACKUP_REQUEST_ANNOTATION
from rocketmq_operator.core.status_view import cell
from rocketmq_operator.platforms.console import Frames, terminal
from rocketmq_operator.render.kubernetes.names import (
    ANNOTATION_AUTHORITY_OVERLAP,
    ANNOTATION_AUTHORITY_STATE,
    ANNOTATION_FENCE,
    ANNOTATION_RESTARTED_AT,
    ANNOTATION_ROTATE_AUTHORITY,
    ANNOTATION_ROTATED_FOR,
    ANNOTATION_SWITCHOVER_TO,
    LABEL_GROUP,
    TLS_AUTHORITY_SECRET,
)

if TYPE_CHECKING:
    from rocketmq_operator.cli.kubectl_api import Cluster

JSON = dict[str, Any]
T = TypeVar("T")
EXIT_FAILED = 1
EXIT_USAGE = 2
POLL_S = 1.0
PLURAL = "brokergroups"
CONTROLLER_PLURAL = "controllergroups"


class Failed(Exception):
    """The operation failed or was refused: printed as one line, exit 1."""


# Commands ------------------------------------------------------------------------------------------------------


def not_found(group: str, namespace: str) -> Failed:
    return Failed(
        f'brokergroup "{group}" not found in namespace "{namespace}"; fix: `kubectl get brokergroups -A` lists '
        "every namespace's groups (then pass -n NAMESPACE)"
    )


def _cluster(args: argparse.Namespace) -> Cluster:
    from rocketmq_operator.cli.kubectl_api import connect

    return connect(getattr(args, "kubeconfig", None), getattr(args, "context", None), getattr(args, "namespace", None))


def _broker_group(cluster: Cluster, group: str) -> JSON:
    bg = cluster.get_custom(PLURAL, group)
    if bg is None:
        raise not_found(group, cluster.namespace)
    return dict(bg)


def _group_pods(cluster: Cluster, group: str) -> list[JSON]:
    return list(cluster.list_pods(f"{LABEL_GROUP}={group},app.kubernetes.io/component=broker"))


def status_document(cluster: Cluster, group: str) -> JSON:
    bg = _broker_group(cluster, group)
    return group_document(bg, _group_pods(cluster, group))


def poll_until(wait_s: float, answer: Callable[[], T | None]) -> T | None:
    """Ask ``answer`` every POLL_S until it returns something (that is returned), or None after ``wait_s``."""
    deadline = time.monotonic() + wait_s
    while True:
        time.sleep(POLL_S)
        found = answer()
        if found is not None:
            return found
        if time.monotonic() >= deadline:
            return None


def watch(show: Callable[[], None], interval_s: float) -> int:
    """Show, then again every ``interval_s`` until interrupted (Ctrl-C ends it with exit 0)."""
    try:
        while True:
            show()
            sys.stdout.flush()
            time.sleep(interval_s)
    except KeyboardInterrupt:
        return 0


def stdout_console() -> Console | None:
    """The terminal a `--watch` redraws in place (None when stdout is not one: the frames are appended)."""
    return terminal()


def cmd_status(args: argparse.Namespace, cluster: Cluster) -> int:
    frames = Frames(stdout_console() if args.watch and args.output != "json" else None, print)

    def show() -> None:
        doc = status_document(cluster, args.group)
        if args.output == "json":
            print(json.dumps(doc, separators=(",", ":")) if args.watch else json.dumps(doc, indent=2))
        else:
            header = ""
            if args.watch:
                header = f"--- {now_iso()}"
                if frames.live:
                    header += f"  (every {args.watch:g}s; Ctrl-C to stop)"
            frames.show(header, render_status(doc))

    if args.watch:
        with frames:
            show()  # a group that does not exist fails at once, not in the loop
            time.sleep(args.watch)
            return watch(show, args.watch)
    show()
    return 0


def auto_target(status: Mapping[str, Any]) -> str | None:
    """`--to auto`: the alive in-sync slave with the longest commit log (ties: the smallest lag, then the name)."""
    candidates = [
        r
        for r in status.get("replicas") or []
        if r.get("role") == "slave" and r.get("alive") and r.get("inSync") and r.get("brokerId") is not None
    ]
    if not candidates:
        return None
    best = min(
        candidates,
        key=lambda r: (-(r.get("maxOffset") or 0), r.get("lagBytes") or 0, str(r.get("name"))),
    )
    return str(best["name"])


def _condition(bg: Mapping[str, Any], type_: str) -> JSON | None:
    return next((c for c in (bg.get("status") or {}).get("conditions") or [] if c.get("type") == type_), None)


def _annotations(bg: Mapping[str, Any]) -> dict[str, str]:
    return dict((bg.get("metadata") or {}).get("annotations") or {})


def _resolve_target(bg: Mapping[str, Any], group: str, wanted: str) -> str:
    status = bg.get("status") or {}
    replicas = status.get("replicas") or []
    if wanted == "auto":
        target = auto_target(status)
        if target is None:
            shown = ", ".join(
                f"{r.get('name')} ({r.get('role')}, alive {cell(r.get('alive'))}, inSync {cell(r.get('inSync'))})"
                for r in replicas
            )
            raise Failed(
                f"{group}: switchover --to auto refused: no alive in-sync slave in status ({shown or 'no replica'}); "
                f"fix: wait until `kubectl rocketmq status {group}` shows one"
            )
        return target
    names = [str(r.get("name")) for r in replicas]
    if wanted.isdigit():
        return next((str(r["name"]) for r in replicas if str(r.get("brokerId")) == wanted), wanted)
    if replicas and wanted not in names:
        raise Failed(
            f"{group}: --to {wanted!r} is not a replica of the group (replicas: {', '.join(names)}); fix: name one "
            "of them, a broker id, or auto"
        )
    return wanted


def _events_about(cluster: Cluster, name: str, since: str, prefix: str) -> list[JSON]:
    found = []
    for e in cluster.list_events():
        involved = e.get("involvedObject") or {}
        when = str(e.get("lastTimestamp") or e.get("eventTime") or (e.get("metadata") or {}).get("creationTimestamp"))
        if involved.get("name") == name and str(e.get("reason", "")).startswith(prefix) and when >= since:
            found.append(e)
    return found


def cmd_switchover(args: argparse.Namespace, cluster: Cluster) -> int:
    group = args.group
    bg = _broker_group(cluster, group)
    mode = (bg.get("spec") or {}).get("haMode", "controller")
    if mode != "controller":
        raise Failed(
            f"{group}: switchover refused: haMode is {mode}; the operator switches over controller-mode groups only "
            "(the RocketMQ controller elects)"
        )
    pending = _annotations(bg).get(ANNOTATION_SWITCHOVER_TO)
    if pending:
        raise Failed(
            f"{group}: a switchover to {pending} is pending already; fix: wait for it, or cancel it with "
            f"`kubectl annotate brokergroup {group} {ANNOTATION_SWITCHOVER_TO}-`"
        )
    target = _resolve_target(bg, group, args.to)
    master = ((bg.get("status") or {}).get("master") or {}).get("replica")
    if master is not None and master == target:
        print(f"{group}: {target} is the master already; nothing to do")
        return 0
    before = _condition(bg, "Switchover")
    started = now_iso()
    cluster.patch_custom(PLURAL, group, {"metadata": {"annotations": {ANNOTATION_SWITCHOVER_TO: target}}})
    if args.wait <= 0:
        print(f"{group}: switchover to {target} requested; follow with `kubectl rocketmq status {group}`")
        return 0
    deadline = time.monotonic() + args.wait
    while True:
        time.sleep(POLL_S)
        bg = _broker_group(cluster, group)
        outcome = _condition(bg, "Switchover")
        cleared = ANNOTATION_SWITCHOVER_TO not in _annotations(bg)
        if cleared and outcome is not None and outcome != before:
            ok = outcome.get("status") == "True"
            word = "done" if ok else f"refused ({outcome.get('reason')})"
            print(f"{group}: switchover to {target} {word}: {outcome.get('message', '')}")
            return 0 if ok else EXIT_FAILED
        if cleared:
            events = _events_about(cluster, group, started, "Switchover")
            if events:
                e = events[-1]
                ok = e.get("type") == "Normal"
                print(f"{group}: switchover to {target} {e.get('reason')}: {e.get('message', '')}")
                return 0 if ok else EXIT_FAILED
            raise Failed(f"{group}: the switchover annotation was removed before the operator recorded an outcome")
        if time.monotonic() >= deadline:
            now_master = ((bg.get("status") or {}).get("master") or {}).get("replica")
            if now_master == target:
                print(f"{group}: master is now {target} (status); the operator has not recorded the outcome yet")
                return 0
            raise Failed(
                f"{group}: switchover to {target} not done after {args.wait:g}s (master {now_master or '-'}); it stays "
                f"requested: is the operator running? (cancel: `kubectl annotate brokergroup {group} "
                f"{ANNOTATION_SWITCHOVER_TO}-`)"
            )


def fence_list(annotations: Mapping[str, str]) -> list[str]:
    return sorted({name.strip() for name in annotations.get(ANNOTATION_FENCE, "").split(",") if name.strip()})


def _group_of(cluster: Cluster, replica: str) -> str:
    pod = cluster.get_pod(replica)
    if pod is not None:
        label = ((pod.get("metadata") or {}).get("labels") or {}).get(LABEL_GROUP)
        if label:
            return str(label)
    group, _, ordinal = replica.rpartition("-")
    if not group or not ordinal.isdigit():
        raise Failed(
            f'replica "{replica}" is neither a pod in namespace "{cluster.namespace}" nor named GROUP-ORDINAL; '
            "fix: name a broker pod (`kubectl get pods -l app.kubernetes.io/component=broker`)"
        )
    return group


def cmd_fence(args: argparse.Namespace, cluster: Cluster) -> int:
    replica = args.replica
    fence = args.command == "fence"
    group = _group_of(cluster, replica)
    bg = _broker_group(cluster, group)
    wanted = set(fence_list(_annotations(bg)))
    recorded = set((bg.get("status") or {}).get("fenced") or [])
    if (replica in wanted) == fence and (replica in recorded) == fence:
        print(f"{group}: {replica} is {'fenced' if fence else 'not fenced'} already")
        return 0
    wanted = wanted | {replica} if fence else wanted - {replica}
    value = ",".join(sorted(wanted)) or None
    cluster.patch_custom(PLURAL, group, {"metadata": {"annotations": {ANNOTATION_FENCE: value}}})
    verb = "fence" if fence else "unfence"
    if args.wait <= 0:
        print(f"{group}: {verb} of {replica} requested; follow with `kubectl rocketmq status {group}`")
        return 0
    deadline = time.monotonic() + args.wait
    while True:
        time.sleep(POLL_S)
        bg = _broker_group(cluster, group)
        recorded = set((bg.get("status") or {}).get("fenced") or [])
        if (replica in recorded) == fence:
            done = "fenced: it refuses every put" if fence else "unfenced: it takes puts again as a master"
            print(f"{group}: {replica} {done}")
            return 0
        problem = _condition(bg, "Fence")
        if time.monotonic() >= deadline:
            why = f": {problem.get('message')}" if problem is not None and problem.get("status") == "False" else ""
            raise Failed(
                f"{group}: {verb} of {replica} not done after {args.wait:g}s{why}; it stays requested (annotation "
                f"{ANNOTATION_FENCE}); is the operator running, and does it handle {ANNOTATION_FENCE}?"
            )


def cmd_restart(args: argparse.Namespace, cluster: Cluster) -> int:
    group = args.group
    bg = _broker_group(cluster, group)
    mode = (bg.get("spec") or {}).get("haMode", "controller")
    if mode != "controller":
        raise Failed(
            f"{group}: restart refused: haMode is {mode}; the operator rolls controller-mode groups only; fix: delete "
            "the pods one at a time, slaves first (`kubectl delete pod ...`)"
        )
    if cluster.get_stateful_set(group) is None:
        raise Failed(f'{group}: statefulset "{group}" not found: the operator has not created it yet')
    before = ((bg.get("status") or {}).get("rollout") or {}).get("targetRevision")
    stamp = now_iso()
    patch = {"spec": {"template": {"metadata": {"annotations": {ANNOTATION_RESTARTED_AT: stamp}}}}}
    cluster.patch_stateful_set(group, patch)
    if args.wait <= 0:
        print(
            f"{group}: rolling restart requested ({ANNOTATION_RESTARTED_AT}={stamp}): one replica at a time, slaves "
            f"first, the master last after a switchover; follow with `kubectl rocketmq status {group} --watch 2`"
        )
        return 0
    deadline = time.monotonic() + args.wait
    while True:
        time.sleep(POLL_S)
        rollout = ((_broker_group(cluster, group).get("status") or {}).get("rollout")) or {}
        new_roll = rollout.get("targetRevision") not in (None, before)
        if new_roll and rollout.get("phase") == "Complete":
            print(
                f"{group}: rolling restart complete: {rollout.get('restarts', 0)} restart(s), "
                f"{rollout.get('switchovers', 0)} switchover(s)"
            )
            return 0
        if new_roll and rollout.get("phase") == "Blocked":
            raise Failed(f"{group}: rolling restart blocked ({rollout.get('reason')}): {rollout.get('message')}")
        if time.monotonic() >= deadline:
            where = (
                f"{rollout.get('phase')}: {rollout.get('currentStep') or rollout.get('message')}"
                if new_roll
                else ("not started")
            )
            raise Failed(f"{group}: rolling restart not complete after {args.wait:g}s ({where}); it goes on")


def cmd_drain_group(args: argparse.Namespace, cluster: Cluster) -> int:
    """spec.draining on (or off with --undo); with --wait, until status.drain says drained (or is gone)."""
    group = args.group
    draining = not args.undo
    _broker_group(cluster, group)
    cluster.patch_custom(PLURAL, group, {"spec": {"draining": draining}})
    if not draining:
        print(f"{group}: drain taken back: the operator gives its master write permission back")
        return 0
    if args.wait <= 0:
        print(
            f"{group}: draining: producers leave it at their next route refresh (30 s), consumers read what it holds; "
            f"follow with `kubectl rocketmq status {group}`; then `kubectl delete brokergroup {group}`"
        )
        return 0
    said = [""]

    def drained() -> bool | None:
        drain = (_broker_group(cluster, group).get("status") or {}).get("drain") or {}
        message = str(drain.get("message") or "")
        if message and message != said[-1]:
            print(message)
            said.append(message)
        return True if drain.get("drained") else None

    if poll_until(args.wait, drained) is None:
        where = said[-1] or "no status.drain yet: is the operator running?"
        raise Failed(f"{group}: not drained after {args.wait:g}s ({where}); it stays draining (spec.draining)")
    print(f"{group}: drained; remove it with `kubectl delete brokergroup {group}`")
    return 0


def cmd_backup(args: argparse.Namespace, cluster: Cluster) -> int:
    """A scheduled metadata backup at once: the `backup-now` annotation, then (with --wait) the operator's answer
    in status.backup."""
    name = args.controller_group
    cg = cluster.get_custom(CONTROLLER_PLURAL, name)
    if cg is None:
        raise Failed(
            f'controllergroup "{name}" not found in namespace "{cluster.namespace}"; fix: `kubectl get '
            "controllergroups -A` lists every namespace's (then pass -n NAMESPACE)"
        )
    if not (cg.get("spec") or {}).get("backup"):
        raise Failed(
            f"{name}: spec.backup is not set; rule: the operator writes backups only where they are scheduled (into "
            f"Secrets {name}-metadata-<i>); fix: `kubectl patch controllergroup {name} --type merge -p "
            '\'{"spec":{"backup":{"every":"24h"}}}\'`, or take one into a file (docs/backup.md)'
        )
    stamp = now_iso()
    cluster.patch_custom(CONTROLLER_PLURAL, name, {"metadata": {"annotations": {BACKUP_REQUEST_ANNOTATION: stamp}}})
    if args.wait <= 0:
        print(f"{name}: backup requested ({BACKUP_REQUEST_ANNOTATION}={stamp}); status.backup says when it is taken")
        return 0

    def answered() -> JSON | None:
        backup = ((cluster.get_custom(CONTROLLER_PLURAL, name) or {}).get("status") or {}).get("backup") or {}
        return dict(backup) if backup.get("lastRequest") == stamp else None

    backup = poll_until(args.wait, answered)
    if backup is None:
        raise Failed(f"{name}: no backup after {args.wait:g}s (is the operator running?); the request stands")
    if backup.get("lastError"):
        raise Failed(f"{name}: backup failed: {backup['lastError']}")
    newest = (backup.get("kept") or [{}])[0]
    print(
        f"{name}: backup of cluster {newest.get('cluster')} in Secret {newest.get('secret')} (key "
        f"{BACKUP_KEY}): {newest.get('topics')} topic(s), {newest.get('subscriptionGroups')} subscription "
        f"group(s), {newest.get('users')} user(s), taken {newest.get('takenAt')}"
    )
    return 0


def cmd_rotate_ca(args: argparse.Namespace, cluster: Cluster) -> int:
    """Ask the operator to replace the namespace's TLS authority (docs/tls.md "Rotating the authority"): the
    request annotation and the overlap on its Secret; with --wait, until the operator has started it."""
    ns = cluster.namespace
    secret = cluster.get_secret_metadata(TLS_AUTHORITY_SECRET)
    if secret is None:
        raise Failed(
            f'secret "{TLS_AUTHORITY_SECRET}" not found in namespace "{ns}": the operator makes it for the first '
            "group with spec.tls and no spec.tls.secretName; fix: pass -n NAMESPACE of such a group (groups with "
            "spec.tls.secretName take their certificates from that issuer: rotate it there)"
        )
    stamp = now_iso()
    cluster.annotate_secret(
        TLS_AUTHORITY_SECRET, {ANNOTATION_ROTATE_AUTHORITY: stamp, ANNOTATION_AUTHORITY_OVERLAP: args.overlap}
    )
    if args.wait <= 0:
        print(
            f"{ns}: rotation of the TLS authority requested ({ANNOTATION_ROTATE_AUTHORITY}={stamp}, overlap "
            f"{args.overlap}); every certificate is issued again at its group's next pass, and no broker restarts; "
            f"follow with `kubectl -n {ns} get secret {TLS_AUTHORITY_SECRET} -o jsonpath='{{.metadata.annotations}}'`"
        )
        return 0

    def started() -> str | None:
        annotations = ((cluster.get_secret_metadata(TLS_AUTHORITY_SECRET) or {}).get("metadata") or {}).get(
            "annotations"
        ) or {}
        done = annotations.get(ANNOTATION_ROTATED_FOR) == stamp
        return str(annotations.get(ANNOTATION_AUTHORITY_STATE) or "rotated") if done else None

    state = poll_until(args.wait, started)
    if state is None:
        raise Failed(f"{ns}: the rotation has not started after {args.wait:g}s (is the operator running?); it stands")
    print(f"{ns}: TLS authority rotated: a new authority signs; {state}")
    return 0


def cmd_report(args: argparse.Namespace, cluster: Cluster) -> int:
    from rocketmq_operator.cli.kubectl_report import write_report

    bg = _broker_group(cluster, args.group)
    out = args.output or f"rocketmq-report-{args.group}-{now_iso().replace(':', '')}.tar.gz"
    members, problems = write_report(cluster, bg, out)
    print(f"{args.group}: report written to {out} ({members} files)")
    for problem in problems:
        print(f"  not included: {problem}", file=sys.stderr)
    return 0


# Parser --------------------------------------------------------------------------------------------------------


def _connection_options(parser: argparse.ArgumentParser, default: Any) -> None:
    parser.add_argument("--kubeconfig", default=default, help="kubeconfig file (default: KUBECONFIG, ~/.kube/config)")
    parser.add_argument("--context", default=default, help="kubeconfig context (default: the current context)")
    parser.add_argument(
        "-n", "--namespace", default=default, help="namespace (default: the context's namespace, else default)"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kubectl rocketmq",
        description="Look at and operate RocketMQ broker groups run by rocketmq-operator.",
    )
    _connection_options(parser, None)
    # The same options after the subcommand (kubectl accepts both); SUPPRESS keeps one given before.
    common = argparse.ArgumentParser(add_help=False)
    _connection_options(common, argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("status", parents=[common], help="a group's replicas, master, SyncStateSet, pods, problems")
    p.add_argument("group", metavar="GROUP")
    p.add_argument("-o", "--output", choices=("table", "json"), default="table")
    p.add_argument("-w", "--watch", type=float, metavar="S", default=0.0, help="show again every S seconds")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("switchover", parents=[common], help="move the master to a replica (the operator's switchover)")
    p.add_argument("group", metavar="GROUP")
    p.add_argument("--to", required=True, metavar="REPLICA|auto", help="pod name, broker id, or auto")
    p.add_argument("--wait", type=float, default=120.0, metavar="S", help="wait for the outcome (0: do not wait)")
    p.set_defaults(func=cmd_switchover)

    for verb, text in (("fence", "make a replica refuse every put"), ("unfence", "give a fenced replica back")):
        p = sub.add_parser(verb, parents=[common], help=text)
        p.add_argument("replica", metavar="REPLICA", help="broker pod name")
        p.add_argument("--wait", type=float, default=60.0, metavar="S", help="wait until done (0: do not wait)")
        p.set_defaults(func=cmd_fence)

    p = sub.add_parser("restart", parents=[common], help="a rolling restart, quorum-safe, by the operator's roll")
    p.add_argument("group", metavar="GROUP")
    p.add_argument("--wait", type=float, default=0.0, metavar="S", help="wait for the roll to complete")
    p.set_defaults(func=cmd_restart)

    p = sub.add_parser(
        "drain-group",
        parents=[common],
        help="take a group out of service before deleting it: producers leave it, consumers read what it holds",
    )
    p.add_argument("group", metavar="GROUP")
    p.add_argument("--undo", action="store_true", help="take the drain back (write permission back on)")
    p.add_argument("--wait", type=float, default=0.0, metavar="S", help="wait until it is drained")
    p.set_defaults(func=cmd_drain_group)

    p = sub.add_parser(
        "backup",
        parents=[common],
        help="a metadata backup now, into the ring of Secrets of the ControllerGroup's spec.backup",
    )
    p.add_argument("controller_group", metavar="CONTROLLERGROUP")
    p.add_argument("--wait", type=float, default=120.0, metavar="S", help="wait for it (0: do not wait)")
    p.set_defaults(func=cmd_backup)

    p = sub.add_parser(
        "rotate-ca",
        parents=[common],
        help="replace the namespace's TLS authority: both trusted during an overlap, every certificate reissued, "
        "no broker restart",
    )
    add_overlap_argument(p)
    p.add_argument("--wait", type=float, default=0.0, metavar="S", help="wait until the operator has started it")
    p.set_defaults(func=cmd_rotate_ca)

    p = sub.add_parser("report", parents=[common], help="a tarball of everything a bug report needs (no Secret)")
    p.add_argument("group", metavar="GROUP")
    p.add_argument("-o", "--output", metavar="FILE.tar.gz", help="default: rocketmq-report-GROUP-TIME.tar.gz")
    p.set_defaults(func=cmd_report)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        from rocketmq_operator.cli.kubectl_api import PluginError
    except ImportError as exc:  # the official client is in the 'kubernetes' extra
        print(
            f"error: kubectl rocketmq needs the 'kubernetes' extra ({exc.name} is missing); fix: pip install "
            "'rocketmq-operator[kubernetes]'",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        cluster = _cluster(args)
    except PluginError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        return int(args.func(args, cluster))
    except (Failed, PluginError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    finally:
        cluster.close()


if __name__ == "__main__":
    raise SystemExit(main())
