"""An in-memory Kubernetes API for unit tests of platforms/kubernetes, with injected failures.

`FakeApi` answers the calls `KubeClient` offers (get, list, apply, patch, patch_strategic, patch_status,
delete) from a dict of objects and records every write in `log`. `fail_on(verb, kind, name=None, status=500)` makes the
next matching call raise `KubeError` (once, or `times` times), as an API server that refuses, conflicts or
times out would; what the code under test does next is then visible in `log` and `objects`.

As the real API server does, `apply` refuses (422) a change of a StatefulSet's immutable spec fields
(volumeClaimTemplates, selector, serviceName, podManagementPolicy). Cluster-scoped kinds (Node, StorageClass)
are stored without a namespace: `put` them as they are and read them with namespace None.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from rocketmq_operator.platforms.kubernetes.kube import KubeError

JSON = dict[str, Any]
Key = tuple[str, str, str]
CLUSTER_SCOPED = frozenset({"Node", "StorageClass", "PersistentVolume"})
# What the API server lets an apply change on an existing StatefulSet; anything else is refused (422).
STATEFULSET_IMMUTABLE = ("volumeClaimTemplates", "selector", "serviceName", "podManagementPolicy")


@dataclass
class Failure:
    verb: str
    kind: str
    name: str | None
    status: int
    times: int


def _merge(target: JSON, patch: JSON) -> JSON:
    """JSON merge patch (RFC 7386): None deletes, dicts merge, anything else replaces."""
    out = copy.deepcopy(target)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


@dataclass
class FakeApi:
    objects: dict[Key, JSON] = field(default_factory=dict)
    log: list[tuple[str, str, str]] = field(default_factory=list)  # every write: (verb, kind, name)
    failures: list[Failure] = field(default_factory=list)
    version: int = 0  # the last resourceVersion handed out

    # --- test set-up ---

    def put(self, obj: JSON) -> JSON:
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        if obj["kind"] not in CLUSTER_SCOPED:
            meta.setdefault("namespace", "ns")
        meta.setdefault("uid", f"uid-{meta['name']}")
        meta.setdefault("generation", 1)
        self.objects[(obj["kind"], meta.get("namespace", ""), meta["name"])] = obj
        return obj

    def fail_on(self, verb: str, kind: str, name: str | None = None, *, status: int = 500, times: int = 1) -> None:
        self.failures.append(Failure(verb, kind, name, status, times))

    def writes_of(self, verb: str) -> list[tuple[str, str]]:
        return [(k, n) for v, k, n in self.log if v == verb]

    # --- the KubeClient surface ---

    def _check(self, verb: str, kind: str, name: str) -> None:
        for failure in self.failures:
            if failure.times > 0 and failure.verb == verb and failure.kind == kind and failure.name in (None, name):
                failure.times -= 1
                raise KubeError(failure.status, f"injected: {verb} {kind}/{name}")

    def _write(self, verb: str, kind: str, name: str) -> None:
        self._check(verb, kind, name)
        self.log.append((verb, kind, name))

    @property
    def writes(self) -> int:
        """Like KubeClient.writes: how many writes were sent."""
        return len(self.log)

    async def get(self, kind: str, namespace: str | None, name: str) -> JSON | None:
        self._check("get", kind, name)
        found = self.objects.get((kind, namespace or "", name))
        return copy.deepcopy(found) if found is not None else None

    async def list(self, kind: str, namespace: str | None, label_selector: str | None = None) -> list[JSON]:
        self._check("list", kind, "")
        wanted = dict(pair.split("=", 1) for pair in label_selector.split(",")) if label_selector else {}
        out = []
        for (k, ns, _), obj in sorted(self.objects.items()):
            labels = obj["metadata"].get("labels") or {}
            if k == kind and ns == (namespace or ns) and all(labels.get(a) == b for a, b in wanted.items()):
                out.append(copy.deepcopy(obj))
        return out

    async def apply(self, obj: JSON) -> JSON:
        meta = obj["metadata"]
        key = (obj["kind"], meta["namespace"], meta["name"])
        current = self.objects.get(key)
        if obj["kind"] == "StatefulSet" and current is not None:
            changed = [f for f in STATEFULSET_IMMUTABLE if obj["spec"].get(f) != current["spec"].get(f)]
            if changed:
                raise KubeError(
                    422,
                    f'StatefulSet.apps "{meta["name"]}" is invalid: spec: Forbidden: updates to statefulset spec for '
                    "fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', "
                    f"'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden ({changed})",
                )
        wanted_version = meta.get("resourceVersion")
        if wanted_version is not None and (current or {}).get("metadata", {}).get("resourceVersion") != wanted_version:
            raise KubeError(
                409, f"Operation cannot be fulfilled on {obj['kind']} {meta['name']!r}: the object has been modified"
            )
        self._write("apply", obj["kind"], meta["name"])
        self.objects[key] = _merge(self.objects.get(key, {}), obj)
        self._new_version(key)
        return copy.deepcopy(self.objects[key])

    async def create(self, obj: JSON) -> JSON | None:
        meta = obj["metadata"]
        key = (obj["kind"], meta["namespace"], meta["name"])
        if key in self.objects:
            return None
        self._write("create", obj["kind"], meta["name"])
        self.objects[key] = copy.deepcopy(obj)
        self._new_version(key)
        return copy.deepcopy(self.objects[key])

    def _new_version(self, key: Key) -> None:
        self.version += 1
        self.objects[key]["metadata"]["resourceVersion"] = str(self.version)

    async def delete(self, kind: str, namespace: str | None, name: str, *, grace_period_s: int | None = None) -> None:
        self._write("delete", kind, name)
        if self.objects.pop((kind, namespace or "", name), None) is None:
            raise KubeError(404, f"{kind}/{name} not found")

    async def patch(self, kind: str, namespace: str, name: str, patch: JSON) -> JSON:
        self._write("patch", kind, name)
        key = (kind, namespace, name)
        if key not in self.objects:
            raise KubeError(404, f"{kind}/{name} not found")
        self.objects[key] = _merge(self.objects[key], patch)
        return copy.deepcopy(self.objects[key])

    async def patch_strategic(self, kind: str, namespace: str, name: str, patch: JSON, sub: str | None = None) -> JSON:
        self._write("patch_strategic", kind, name)
        obj = self.objects[(kind, namespace, name)]
        for cond in (patch.get("status") or {}).get("conditions", []):
            conditions = obj.setdefault("status", {}).setdefault("conditions", [])
            conditions[:] = [c for c in conditions if c.get("type") != cond["type"]] + [cond]
        return copy.deepcopy(obj)

    async def patch_status(
        self, kind: str, namespace: str, name: str, status: JSON, *, resource_version: str | None = None
    ) -> JSON:
        key = (kind, namespace, name)
        if key not in self.objects:
            raise KubeError(404, f"{kind}/{name} not found")
        if resource_version is not None and self.objects[key]["metadata"].get("resourceVersion") != resource_version:
            raise KubeError(409, f"Operation cannot be fulfilled on {kind} {name!r}: the object has been modified")
        self._write("patch_status", kind, name)
        self.objects[key] = _merge(self.objects[key], {"status": status})
        self._new_version(key)
        return copy.deepcopy(self.objects[key])
