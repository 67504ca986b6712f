#!/usr/bin/env python3
"""The test cluster's volume resizer: the storage back end's half of a PersistentVolumeClaim expansion, for the
loop-device `local` volumes of ``k8s/cluster.py`` (StorageClass ``rmq-expandable``). Python 3.11 stdlib only.

Why hand-written: a CSI driver does this on a real cluster (its controller plug-in and the kubernetes-csi
external-resizer), and neither the CSI host-path driver nor the sidecars are served by the Go module proxy here
(docs/notes/three-nodes.md, 2.5). It plays the disk array and nothing more: the claim's patch (the operator's),
the API server's resize admission (``allowVolumeExpansion``), the expand controller (which, finding no in-tree
expander for ``local``, waits for an external one), the kubelet's online file-system growth (the in-tree
``local`` plug-in: ``xfs_growfs`` on the mounted file system) and XFS are the real ones.

Contract: for each claim of the class whose request exceeds its volume's capacity, grow the volume's backing file
(``truncate``, sparse), make the loop device see it (``losetup -c``), set the PersistentVolume's capacity, and mark
the claim ``allocatedResourceStatuses.storage: NodeResizePending`` with the new ``allocatedResources`` (the state
the kubelet expands in: ``node_expander.go runPreCheck``). The kubelet then grows the file system of the mounted
volume and sets the claim's ``status.capacity``. A volume never shrinks; a device not backed by a file under the
cluster's state directory is never touched. Driven by a watch of the claims (no polling); a failed step is
logged and retried at the claim's next event or the watch's next relist.

Its quantity parser is its own, not the operator's ``api.quantity``: the cluster scripts run on the system Python
without the project installed.

    resizer.py --state-dir DIR      # run by cluster.py up, stopped by down
"""

from __future__ import annotations

import argparse
import json
import os
import re
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

EXPANDABLE_CLASS = "rmq-expandable"
NODE_RESIZE_PENDING = "NodeResizePending"

_SUFFIX = {
    "": 1,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
}
_QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]+)?)([a-zA-Z]*)$")


def parse_bytes(quantity: str | None) -> int | None:
    """A storage quantity (``10Gi``, ``11811160064``, ``1.5Gi``) in bytes; None when absent or not a byte size."""
    match = _QUANTITY.match((quantity or "").strip())
    if not match or match.group(2) not in _SUFFIX:
        return None
    return int(float(match.group(1)) * _SUFFIX[match.group(2)])


@dataclass(frozen=True)
class ResizeStep:
    """What one claim needs from the back end now (``plan``): grow the volume to ``size``, mark the claim, or both."""

    size: str  # the claim's request, as written (the PV's capacity takes the same text)
    size_bytes: int
    grow_volume: bool
    mark_claim: bool


def plan(claim: dict, volume: dict | None) -> ResizeStep | None:
    """The step a claim of the expandable class needs, or None. Pure: ``claim`` and ``volume`` are the API's
    objects. Grow when the request exceeds the volume's capacity; mark when the request exceeds both the claim's
    capacity and what is already allocated to it (the kubelet clears the mark once it has grown the file system)."""
    spec = claim.get("spec") or {}
    status = claim.get("status") or {}
    if spec.get("storageClassName") != EXPANDABLE_CLASS or status.get("phase") != "Bound" or volume is None:
        return None
    size = ((spec.get("resources") or {}).get("requests") or {}).get("storage")
    wanted = parse_bytes(size)
    capacity = parse_bytes(((volume.get("spec") or {}).get("capacity") or {}).get("storage"))
    if wanted is None or capacity is None or size is None:
        return None
    grow = wanted > capacity
    claimed = parse_bytes((status.get("capacity") or {}).get("storage")) or 0
    allocated = parse_bytes((status.get("allocatedResources") or {}).get("storage")) or 0
    mark = wanted > claimed and wanted > allocated
    if not (grow or mark):
        return None
    return ResizeStep(size=size, size_bytes=wanted, grow_volume=grow, mark_claim=mark)


class Api:
    """The API server as the cluster's admin (client certificate), over HTTPS with the cluster's CA."""

    def __init__(self, state: Path) -> None:
        kubeconfig = json.loads((state / "kubeconfig").read_text())  # the harness writes it as JSON
        self.server = kubeconfig["clusters"][0]["cluster"]["server"]
        pki = state / "pki"
        self.ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        self.ctx.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))

    def request(self, method: str, path: str, body: dict | None = None, timeout: float = 30) -> dict:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.server + path, data=data, method=method)
        if body is not None:
            req.add_header("Content-Type", "application/merge-patch+json")
        with urllib.request.urlopen(req, context=self.ctx, timeout=timeout) as resp:
            return json.loads(resp.read())

    def watch(self, path: str, resource_version: str, timeout_s: int = 300):  # type: ignore[no-untyped-def]
        url = f"{self.server}{path}?watch=1&resourceVersion={resource_version}&timeoutSeconds={timeout_s}"
        with urllib.request.urlopen(url, context=self.ctx, timeout=timeout_s + 30) as resp:
            for line in resp:
                if line.strip():
                    yield json.loads(line)


def _log(msg: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {msg}", flush=True)


def backing_file(device: str) -> Path | None:
    """The file behind loop device ``device`` (``/dev/loop3``), from sysfs; None if it is not a loop device."""
    name = Path(device).name
    try:
        return Path((Path("/sys/block") / name / "loop" / "backing_file").read_text().strip())
    except OSError:
        return None


def grow(state: Path, device: str, size_bytes: int) -> None:
    """Grow the file behind ``device`` to ``size_bytes`` (sparse) and make the loop device see the new size."""
    path = backing_file(device)
    if path is None or state not in path.parents:
        raise RuntimeError(f"{device} is not a loop device backed by a file under {state}; not touched")
    if path.stat().st_size < size_bytes:
        os.truncate(path, size_bytes)
    subprocess.run(["losetup", "-c", device], check=True, capture_output=True, text=True, timeout=60)


def handle(api: Api, state: Path, claim: dict) -> None:
    meta = claim["metadata"]
    volume_name = (claim.get("spec") or {}).get("volumeName")
    volume = api.request("GET", f"/api/v1/persistentvolumes/{volume_name}") if volume_name else None
    step = plan(claim, volume)
    if step is None or volume is None:
        return
    who = f"{meta['namespace']}/{meta['name']} ({volume_name})"
    if step.grow_volume:
        device = ((volume.get("spec") or {}).get("local") or {}).get("path", "")
        grow(state, device, step.size_bytes)
        api.request("PATCH", f"/api/v1/persistentvolumes/{volume_name}", {"spec": {"capacity": {"storage": step.size}}})
        _log(f"{who}: volume {device} grown to {step.size}")
    if step.mark_claim:
        status = {
            "allocatedResources": {"storage": step.size},
            "allocatedResourceStatuses": {"storage": NODE_RESIZE_PENDING},
        }
        api.request(
            "PATCH", f"/api/v1/namespaces/{meta['namespace']}/persistentvolumeclaims/{meta['name']}/status",
            {"status": status},
        )  # fmt: skip
        _log(f"{who}: claim marked {NODE_RESIZE_PENDING} at {step.size}; the kubelet grows the file system")


def _handle_logged(api: Api, state: Path, claim: dict) -> None:
    try:
        handle(api, state, claim)
    except (OSError, RuntimeError, subprocess.SubprocessError, urllib.error.URLError, KeyError, ValueError) as exc:
        meta = claim.get("metadata") or {}
        _log(f"{meta.get('namespace')}/{meta.get('name')}: not resized this time: {exc}")


def run(state: Path) -> None:
    api = Api(state)
    _log(f"watching the claims of class {EXPANDABLE_CLASS}")
    while True:
        try:
            listed = api.request("GET", "/api/v1/persistentvolumeclaims")
            for claim in listed.get("items", []):
                _handle_logged(api, state, claim)
            version = listed["metadata"]["resourceVersion"]
            for event in api.watch("/api/v1/persistentvolumeclaims", version):
                if event.get("type") in ("ADDED", "MODIFIED"):
                    _handle_logged(api, state, event["object"])
                elif event.get("type") == "ERROR":
                    break  # an expired resource version: list again
        except (OSError, urllib.error.URLError, ValueError, KeyError) as exc:
            _log(f"the API server's watch ended ({exc}); listing again in 1s")
            time.sleep(1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--state-dir", type=Path, required=True)
    args = ap.parse_args(argv)
    try:
        run(args.state_dir.resolve())
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
