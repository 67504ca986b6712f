"""`kubectl rocketmq report GROUP`: one tarball with what a bug report about a BrokerGroup needs.

Contract: `write_report(cluster, bg, path)` writes a gzipped tar whose members sit under
`rocketmq-report-<group>/`:

* `brokergroup.yaml`, `controllergroup.yaml` (its `spec.controllerRef`), `statefulsets/<name>.yaml`;
* `status.json`: the operator's status documents (`brokerGroup`, `controllerGroup`) and `status.txt`, the
  `kubectl rocketmq status` view;
* `events.yaml`: the namespace's Events involving the groups, their StatefulSets, pods and PVCs;
* `pods/<pod>.yaml` and `pods/<pod>.describe.txt` (conditions, containers, restarts, last state, the pod's
  events) for every pod of both groups; `logs/<pod>/<container>.log`, and `<container>.previous.log` for a
  container that restarted;
* `README.txt`: when, from where, what is inside, and what could not be read (one line each).

Secrets are never included: nothing here asks the API server for a Secret (pods and StatefulSets reference
Secrets by name only), and ConfigMaps are not collected.
"""

from __future__ import annotations

import io
import json
import tarfile
import time
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from rocketmq_operator.cli.kubectl_api import Cluster, PluginError
from rocketmq_operator.cli.kubectl_view import group_document, now_iso, render_status
from rocketmq_operator.render.kubernetes.names import LABEL_GROUP

JSON = dict[str, Any]


def _yaml(obj: object) -> str:
    return yaml.safe_dump(obj, sort_keys=False, default_flow_style=False)


def _involves(event: Mapping[str, Any], names: set[str], pods: Sequence[str]) -> bool:
    name = str((event.get("involvedObject") or {}).get("name") or "")
    # A PVC of a StatefulSet pod is named <claim>-<pod>.
    return name in names or any(name.endswith(f"-{pod}") for pod in pods)


def describe_pod(pod: Mapping[str, Any], events: Sequence[Mapping[str, Any]]) -> str:
    """A plain-text description of a pod, in the spirit of `kubectl describe pod`."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    lines = [
        f"Name:         {meta.get('name')}",
        f"Namespace:    {meta.get('namespace')}",
        f"Node:         {spec.get('nodeName') or '<none>'}",
        f"Start Time:   {status.get('startTime') or '<none>'}",
        f"Labels:       {', '.join(f'{k}={v}' for k, v in sorted((meta.get('labels') or {}).items())) or '<none>'}",
        f"Status:       {'Terminating' if meta.get('deletionTimestamp') else status.get('phase')}",
        f"IP:           {status.get('podIP') or '<none>'}",
        "Conditions:",
    ]
    for c in status.get("conditions") or []:
        lines.append(f"  {c.get('type')}: {c.get('status')} {c.get('reason') or ''} {c.get('message') or ''}".rstrip())
    lines.append("Containers:")
    by_name = {c.get("name"): c for c in status.get("containerStatuses") or []}
    for container in spec.get("containers") or []:
        st = by_name.get(container.get("name")) or {}
        lines.append(f"  {container.get('name')}:")
        lines.append(f"    Image:          {container.get('image')}")
        lines.append(f"    Ready:          {st.get('ready')}")
        lines.append(f"    Restart Count:  {st.get('restartCount', 0)}")
        lines.append(f"    State:          {json.dumps(st.get('state') or {}, sort_keys=True)}")
        lines.append(f"    Last State:     {json.dumps(st.get('lastState') or {}, sort_keys=True)}")
    lines.append("Events:")
    for e in events:
        when = e.get("lastTimestamp") or e.get("eventTime") or ""
        lines.append(f"  {when}  {e.get('type')}  {e.get('reason')}  {e.get('message')}")
    return "\n".join(lines) + "\n"


class _Tar:
    def __init__(self, tar: tarfile.TarFile, root: str) -> None:
        self.tar = tar
        self.root = root
        self.count = 0

    def add(self, name: str, text: str) -> None:
        data = text.encode("utf-8")
        info = tarfile.TarInfo(f"{self.root}/{name}")
        info.size = len(data)
        info.mtime = int(time.time())
        info.mode = 0o644
        self.tar.addfile(info, io.BytesIO(data))
        self.count += 1


def write_report(cluster: Cluster, bg: JSON, path: str) -> tuple[int, list[str]]:
    """Write the tarball; returns the number of files in it and what could not be read."""
    meta = bg.get("metadata") or {}
    group = str(meta.get("name"))
    problems: list[str] = []
    cg_name = ((bg.get("spec") or {}).get("controllerRef") or {}).get("name")
    cg = cluster.get_custom("controllergroups", cg_name) if cg_name else None
    if cg_name and cg is None:
        problems.append(f"controllergroup {cg_name} (spec.controllerRef) does not exist")
    groups = [group] + ([str(cg_name)] if cg is not None else [])
    pods: list[JSON] = []
    for name in groups:
        pods.extend(cluster.list_pods(f"{LABEL_GROUP}={name}"))
    pod_names = [str(p["metadata"]["name"]) for p in pods]
    try:
        events = cluster.list_events()
    except PluginError as exc:
        events = []
        problems.append(f"events: {exc}")
    stateful_sets = [s for s in (cluster.get_stateful_set(name) for name in groups) if s is not None]
    involved = set(groups) | {str(s["metadata"]["name"]) for s in stateful_sets} | set(pod_names)
    ours = [e for e in events if _involves(e, involved, pod_names)]
    ours.sort(key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""))
    broker_pods = [p for p in pods if (p["metadata"].get("labels") or {}).get(LABEL_GROUP) == group]
    broker_pods = [
        p for p in broker_pods if (p["metadata"].get("labels") or {}).get("app.kubernetes.io/component") == "broker"
    ]

    with tarfile.open(path, "w:gz") as raw:
        out = _Tar(raw, f"rocketmq-report-{group}")
        out.add("brokergroup.yaml", _yaml(bg))
        if cg is not None:
            out.add("controllergroup.yaml", _yaml(cg))
        for sts in stateful_sets:
            out.add(f"statefulsets/{sts['metadata']['name']}.yaml", _yaml(sts))
        out.add(
            "status.json",
            json.dumps({"brokerGroup": bg.get("status"), "controllerGroup": (cg or {}).get("status")}, indent=2) + "\n",
        )
        out.add("status.txt", render_status(group_document(bg, broker_pods)) + "\n")
        out.add("events.yaml", _yaml(ours))
        for pod in pods:
            name = str(pod["metadata"]["name"])
            out.add(f"pods/{name}.yaml", _yaml(pod))
            pod_events = [e for e in ours if (e.get("involvedObject") or {}).get("name") == name]
            out.add(f"pods/{name}.describe.txt", describe_pod(pod, pod_events))
            statuses = {c.get("name"): c for c in (pod.get("status") or {}).get("containerStatuses") or []}
            for container in (pod.get("spec") or {}).get("containers") or []:
                cname = str(container.get("name"))
                restarted = int((statuses.get(cname) or {}).get("restartCount") or 0) > 0
                for previous in (False, True) if restarted else (False,):
                    try:
                        log = cluster.pod_log(name, cname, previous=previous)
                    except PluginError as exc:
                        problems.append(str(exc))
                        continue
                    out.add(f"logs/{name}/{cname}{'.previous' if previous else ''}.log", log)
        readme = [
            f"rocketmq-operator report of brokergroup {meta.get('namespace')}/{group}",
            f"written {now_iso()} from {cluster.target.server} (context {cluster.target.context or 'in-cluster'})",
            f"controllergroup: {cg_name or '-'}; pods: {', '.join(pod_names) or 'none'}; events: {len(ours)}",
            "Secrets are never included.",
            *(f"not included: {p}" for p in problems),
        ]
        out.add("README.txt", "\n".join(readme) + "\n")
        count = out.count
    return count, problems
