"""A thin asyncio Kubernetes API client: get, list, server-side apply, delete, patch status.

Built on aiohttp (already a kopf dependency) and kopf's own credential discovery, instead of the official
client, which would dominate the operator's memory (Kopf's critiques). Only the kinds the operator manages
are mapped.
"""

from __future__ import annotations

import binascii
import contextlib
import json
import os
import ssl
import tempfile
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import aiohttp

if TYPE_CHECKING:
    import kopf

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


SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"
CREDENTIALS_FIX = "fix: set KUBECONFIG to a kubeconfig file, or run the operator in a pod with a service account"
MALFORMED_FIX = (
    "fix: repair it (`kubectl config view` shows what it defines), set KUBECONFIG to a working kubeconfig, "
    "or run the operator in a pod with a service account"
)


class CredentialsError(RuntimeError):
    """No usable Kubernetes credentials; the message is one line: what was tried, what is wrong, the fix."""


def _kubeconfig_paths() -> tuple[list[str], str]:
    """The kubeconfig files kopf would read, and where that list came from (for the message)."""
    env = os.environ.get("KUBECONFIG")
    if env:
        paths = [os.path.expanduser(p.strip()) for p in env.split(os.pathsep) if p.strip()]
        return paths, "KUBECONFIG"
    home_config = os.path.expanduser("~/.kube/config")
    if os.path.exists(home_config):
        return [home_config], "the default ~/.kube/config"
    return [], ""


def _kubeconfig_problem(exc: Exception) -> str:
    """What is wrong with a kubeconfig kopf could not read, in a few words (never a traceback)."""
    import yaml

    if isinstance(exc, yaml.YAMLError):
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        return f"is not valid YAML{where}"
    if isinstance(exc, KeyError) and exc.args[0] == "name":
        return "has an entry in contexts, clusters or users without a name"
    if isinstance(exc, KeyError):
        return (
            f"refers to {exc.args[0]!r}, which it does not define "
            "(check current-context and the names in contexts, clusters and users)"
        )
    if isinstance(exc, AttributeError | TypeError):
        return "is not a kubeconfig (expected a mapping with clusters, contexts, users and current-context)"
    if isinstance(exc, OSError):
        return f"cannot be read ({exc.strerror or exc})"
    text = str(exc).strip().rstrip(".")
    if "current context is not set" in text.lower():
        return "sets no current-context"
    return text


def connection_info(settings: kopf.OperatorSettings | None = None) -> kopf.ConnectionInfo:
    """kopf's ConnectionInfo from the service account (in a pod) or the kubeconfig, else CredentialsError.

    The same look-up as kopf's login_with_service_account and login_with_kubeconfig, but every failure is
    one line naming the file (or the absence of both) and the fix, so `run` can refuse before kopf starts.
    """
    import kopf
    import yaml

    settings = settings if settings is not None else kopf.OperatorSettings()
    if os.path.exists(SERVICE_ACCOUNT_TOKEN):
        try:
            info = kopf.login_with_service_account(settings=settings)
        except OSError as exc:
            raise CredentialsError(
                f"service account token {SERVICE_ACCOUNT_TOKEN} cannot be read ({exc.strerror or exc}); "
                "fix: check the pod's service account mount, or set KUBECONFIG to a kubeconfig file"
            ) from None
        if info is not None:
            return info
    paths, source = _kubeconfig_paths()
    if not paths:
        raise CredentialsError(
            "no Kubernetes credentials: not in a cluster (no service account token at "
            f"{SERVICE_ACCOUNT_TOKEN}) and no kubeconfig (KUBECONFIG is not set and ~/.kube/config "
            f"does not exist); {CREDENTIALS_FIX}"
        )
    for path in paths:
        if not os.path.isfile(path):
            raise CredentialsError(
                f"kubeconfig {path} (from {source}) does not exist or is not a file; {CREDENTIALS_FIX}"
            )
    named = ", ".join(paths)
    try:
        info = kopf.login_with_kubeconfig(settings=settings)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, yaml.YAMLError, kopf.LoginError) as exc:
        raise CredentialsError(
            f"kubeconfig {named} (from {source}) {_kubeconfig_problem(exc)}; {MALFORMED_FIX}"
        ) from None
    if info is None or not info.server:
        raise CredentialsError(
            f"kubeconfig {named} (from {source}): the current context's cluster has no server; {MALFORMED_FIX}"
        )
    return info


def ssl_context(info: kopf.ConnectionInfo, origin: str = "the kubeconfig") -> ssl.SSLContext:
    """The TLS context for the API server from kopf's ConnectionInfo; unreadable certificates are one line."""
    ctx = ssl.create_default_context()
    written: list[str] = []
    try:
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
            written += [cert_path, key_path]
        if cert_path and key_path:
            ctx.load_cert_chain(cert_path, key_path)
    except (OSError, ValueError, binascii.Error) as exc:
        # ssl.SSLError is an OSError; a bad base64 `*-data` field is a binascii.Error (a ValueError).
        reason = getattr(exc, "strerror", None) or (str(exc).splitlines() or [type(exc).__name__])[0]
        raise CredentialsError(
            f"the certificates of {origin} cannot be loaded ({reason}); fix: check certificate-authority(-data), "
            "client-certificate(-data) and client-key(-data) of the current context's cluster and user"
        ) from None
    finally:
        for path in written:  # the context holds the key now; leave no copy of it on disk
            with contextlib.suppress(OSError):
                os.unlink(path)
    return ctx


def check_credentials() -> None:
    """Raise CredentialsError unless there are credentials the client could use (no API request is made)."""
    info = connection_info()
    paths, source = _kubeconfig_paths()
    in_pod = os.path.exists(SERVICE_ACCOUNT_TOKEN)  # connection_info prefers the service account
    origin = "the service account" if in_pod or not paths else f"kubeconfig {', '.join(paths)} (from {source})"
    ssl_context(info, origin)


@dataclass
class KubeClient:
    server: str
    session: aiohttp.ClientSession
    headers: dict[str, str]
    writes: int = 0  # API writes made by this client (tests count them)

    @classmethod
    async def from_kopf_login(cls) -> KubeClient:
        """Credentials the way kopf finds them: in-cluster service account, else kubeconfig."""
        info = connection_info()
        ctx = ssl_context(info)
        headers = {"Accept": "application/json"}
        if info.token:
            headers["Authorization"] = f"{info.scheme or 'Bearer'} {info.token}"
        session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx))
        return cls(server=str(info.server).rstrip("/"), session=session, headers=headers)

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
