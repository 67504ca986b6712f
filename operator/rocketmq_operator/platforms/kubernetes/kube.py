"""A thin asyncio Kubernetes API client: get, list, server-side apply, delete, patch status.

Built on aiohttp (already a kopf dependency) and kopf's own credential discovery, instead of the official
client, which would dominate the operator's memory (Kopf's critiques). Only the kinds the operator manages
are mapped.
"""

from __future__ import annotations

import json
import ssl
import tempfile
from dataclasses import dataclass
from typing import Any

import aiohttp

JSON = dict[str, Any]
FIELD_MANAGER = "rocketmq-operator"

# kind → (api prefix, plural, namespaced)
_KINDS: dict[str, tuple[str, str, bool]] = {
    "ConfigMap": ("/api/v1", "configmaps", True),
    "Service": ("/api/v1", "services", True),
    "Pod": ("/api/v1", "pods", True),
    "PersistentVolumeClaim": ("/api/v1", "persistentvolumeclaims", True),
    "Event": ("/api/v1", "events", True),
    "StatefulSet": ("/apis/apps/v1", "statefulsets", True),
    "PodDisruptionBudget": ("/apis/policy/v1", "poddisruptionbudgets", True),
    # Cluster-scoped, read only: whether a PVC's class can grow (storage expansion), whether the master's node
    # is cordoned (the switchover before a node drain).
    "StorageClass": ("/apis/storage.k8s.io/v1", "storageclasses", False),
    "Node": ("/api/v1", "nodes", False),
    "BrokerGroup": ("/apis/rocketmq-operator.dev/v1alpha1", "brokergroups", True),
    "ControllerGroup": ("/apis/rocketmq-operator.dev/v1alpha1", "controllergroups", True),
    "Topic": ("/apis/rocketmq-operator.dev/v1alpha1", "topics", True),
    "ConsumerGroup": ("/apis/rocketmq-operator.dev/v1alpha1", "consumergroups", True),
}


def _as_bytes(data: str | bytes) -> bytes:
    """PEM bytes from kubeconfig data, which arrives base64-encoded (kubeconfig's `*-data` fields)."""
    raw = data.encode() if isinstance(data, str) else data
    if raw.lstrip().startswith(b"-----BEGIN"):
        return raw
    import base64

    return base64.b64decode(raw)


class KubeError(RuntimeError):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


def object_path(kind: str, namespace: str | None, name: str | None = None, sub: str | None = None) -> str:
    prefix, plural, namespaced = _KINDS[kind]
    path = prefix
    if namespaced and namespace:
        path += f"/namespaces/{namespace}"
    path += f"/{plural}"
    if name:
        path += f"/{name}"
    if sub:
        path += f"/{sub}"
    return path


@dataclass
class KubeClient:
    server: str
    session: aiohttp.ClientSession
    headers: dict[str, str]
    writes: int = 0  # API writes made by this client (tests count them)

    @classmethod
    async def from_kopf_login(cls) -> KubeClient:
        """Credentials the way kopf finds them: in-cluster service account, else kubeconfig."""
        import kopf

        settings = kopf.OperatorSettings()
        info = kopf.login_with_service_account(settings=settings) or kopf.login_with_kubeconfig(settings=settings)
        if info is None:
            raise KubeError(0, "no Kubernetes credentials: not in a cluster and no kubeconfig found")
        ctx = ssl.create_default_context()
        if info.insecure:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        if info.ca_path:
            ctx.load_verify_locations(cafile=info.ca_path)
        elif info.ca_data:
            ctx.load_verify_locations(cadata=_as_bytes(info.ca_data).decode())
        cert_path, key_path = info.certificate_path, info.private_key_path
        if info.certificate_data and info.private_key_data:
            # ssl wants files; kopf does the same dance for data-embedded kubeconfigs.
            cert_file = tempfile.NamedTemporaryFile(suffix=".crt", delete=False)  # noqa: SIM115
            cert_file.write(_as_bytes(info.certificate_data))
            cert_file.close()
            key_file = tempfile.NamedTemporaryFile(suffix=".key", delete=False)  # noqa: SIM115
            key_file.write(_as_bytes(info.private_key_data))
            key_file.close()
            cert_path, key_path = cert_file.name, key_file.name
        if cert_path and key_path:
            ctx.load_cert_chain(cert_path, key_path)
        headers = {"Accept": "application/json"}
        if info.token:
            headers["Authorization"] = f"{info.scheme or 'Bearer'} {info.token}"
        session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx))
        return cls(server=info.server.rstrip("/"), session=session, headers=headers)

    async def close(self) -> None:
        await self.session.close()

    async def _request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        content_type: str | None = None,
        params: dict[str, str] | None = None,
    ) -> JSON | None:
        headers = dict(self.headers)
        data = None
        if body is not None:
            headers["Content-Type"] = content_type or "application/json"
            data = json.dumps(body)
        if method != "GET":
            self.writes += 1
        async with self.session.request(method, self.server + path, data=data, headers=headers, params=params) as resp:
            text = await resp.text()
            if resp.status == 404 and method in ("GET", "DELETE"):
                return None
            if resp.status >= 400:
                try:
                    message = json.loads(text).get("message", text)
                except ValueError:
                    message = text
                raise KubeError(resp.status, message)
            return json.loads(text) if text else {}

    async def get(self, kind: str, namespace: str | None, name: str) -> JSON | None:
        return await self._request("GET", object_path(kind, namespace, name))

    async def list(self, kind: str, namespace: str | None, label_selector: str | None = None) -> list[JSON]:
        params = {"labelSelector": label_selector} if label_selector else None
        result = await self._request("GET", object_path(kind, namespace), params=params)
        return list((result or {}).get("items", []))

    async def apply(self, obj: JSON) -> JSON:
        """Server-side apply, forcing ownership of the fields we render."""
        meta = obj["metadata"]
        path = object_path(obj["kind"], meta.get("namespace"), meta["name"])
        result = await self._request(
            "PATCH",
            path,
            body=obj,
            content_type="application/apply-patch+yaml",
            params={"fieldManager": FIELD_MANAGER, "force": "true"},
        )
        return result or {}

    async def delete(self, kind: str, namespace: str | None, name: str, *, grace_period_s: int | None = None) -> None:
        params = {"gracePeriodSeconds": str(grace_period_s)} if grace_period_s is not None else None
        await self._request("DELETE", object_path(kind, namespace, name), params=params)

    async def patch(self, kind: str, namespace: str, name: str, patch: JSON) -> JSON:
        result = await self._request(
            "PATCH", object_path(kind, namespace, name), body=patch, content_type="application/merge-patch+json"
        )
        return result or {}

    async def patch_strategic(self, kind: str, namespace: str, name: str, patch: JSON, sub: str | None = None) -> JSON:
        """Strategic merge patch (core kinds): lists such as status.conditions merge by their key."""
        result = await self._request(
            "PATCH",
            object_path(kind, namespace, name, sub),
            body=patch,
            content_type="application/strategic-merge-patch+json",
        )
        return result or {}

    async def patch_status(self, kind: str, namespace: str, name: str, status: JSON) -> JSON:
        result = await self._request(
            "PATCH",
            object_path(kind, namespace, name, "status"),
            body={"status": status},
            content_type="application/merge-patch+json",
        )
        return result or {}
