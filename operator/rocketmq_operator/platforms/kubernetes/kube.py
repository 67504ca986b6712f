"""The operator's Kubernetes API access: the official client's `DynamicClient`, driven from asyncio.

Contract:

* `KubeClient` offers the calls the platform makes (get, list, server-side apply, delete, merge and strategic
  patches, status patches) on any kind the API server serves; each kind's resource is found by the client's
  discovery, from the apiVersion the operator reads it at (`API_VERSIONS`, or the object's own on apply).
* The official client is synchronous: every request runs in one of the client's own worker threads
  (`API_THREADS`, created with the client and shut down by `close`), so the event loop never waits on the
  network and the passes of many groups do not queue behind asyncio's small default executor. A refusal is a
  `KubeError` with the HTTP status and the API server's message; a missing object is None on get and nothing on
  delete. `writes` counts the writes sent (the operator's metrics, the tests).
* Credentials: `check_credentials` (before kopf starts) and the login handler (`connection_info`) give one-line
  errors; the client loads the same credentials with the official loaders, in the same order: the pod's
  service account when in a cluster (its token mounted and KUBERNETES_SERVICE_HOST set), else the kubeconfig
  (KUBECONFIG, several files merged, else ~/.kube/config).
"""

from __future__ import annotations

import asyncio
import binascii
import contextlib
import contextvars
import functools
import json
import os
import ssl
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from rocketmq_operator.api.models import API_GROUP, API_VERSION

if TYPE_CHECKING:
    import kopf

JSON = dict[str, Any]
FIELD_MANAGER = "rocketmq-operator"
TIMEOUT_S = 30.0
API_THREADS = 32
"""Requests in flight at once per client: every group's pass waits on the API server, not on CPU, and asyncio's
default executor (min(32, cores + 4): 6 threads on 2 cores) made all of them queue; 32 is that same cap for I/O."""
T = TypeVar("T")

# The apiVersion the operator reads each kind at; discovery finds the rest (path, scope, verbs).
API_VERSIONS: dict[str, str] = {
    "ConfigMap": "v1",
    "Secret": "v1",
    "Service": "v1",
    "Pod": "v1",
    "PersistentVolumeClaim": "v1",
    "Event": "v1",
    "Node": "v1",
    "StatefulSet": "apps/v1",
    "Deployment": "apps/v1",
    "PodDisruptionBudget": "policy/v1",
    "NetworkPolicy": "networking.k8s.io/v1",
    "StorageClass": "storage.k8s.io/v1",
    "BrokerGroup": f"{API_GROUP}/{API_VERSION}",
    "ControllerGroup": f"{API_GROUP}/{API_VERSION}",
    "Topic": f"{API_GROUP}/{API_VERSION}",
    "ConsumerGroup": f"{API_GROUP}/{API_VERSION}",
    "Proxy": f"{API_GROUP}/{API_VERSION}",
    "User": f"{API_GROUP}/{API_VERSION}",
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


class KubeClientClosed(KubeError):
    """A request after `KubeClient.close`: the operator is stopping (a timer kopf left running past its cleanup)."""

    def __init__(self) -> None:
        super().__init__(503, "the Kubernetes client is closed: the operator is stopping")


SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"


def _service_account_file(name: str) -> str:
    return os.path.join(os.path.dirname(SERVICE_ACCOUNT_TOKEN), name)


def in_cluster() -> bool:
    """In a pod with a service account, as the official client decides it: the token and the service's address."""
    return os.path.exists(SERVICE_ACCOUNT_TOKEN) and bool(os.environ.get("KUBERNETES_SERVICE_HOST"))


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
    if in_cluster():
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
    in_pod = in_cluster()  # connection_info prefers the service account
    origin = "the service account" if in_pod or not paths else f"kubeconfig {', '.join(paths)} (from {source})"
    ssl_context(info, origin)
    official_configuration(origin)


def official_configuration(origin: str = "the kubeconfig") -> Any:
    """The official client's Configuration, loaded as `connection_info` looks credentials up (in-cluster first)."""
    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.config.incluster_config import InClusterConfigLoader

    configuration = client.Configuration()
    incluster: Callable[..., Any] = InClusterConfigLoader  # the client's config helpers carry no annotations
    load_kubeconfig: Callable[..., None] = config.load_kube_config
    try:
        if in_cluster():
            incluster(token_filename=SERVICE_ACCOUNT_TOKEN, cert_filename=_service_account_file("ca.crt")).load_and_set(
                configuration
            )
        else:
            paths, _ = _kubeconfig_paths()
            load_kubeconfig(config_file=os.pathsep.join(paths) or None, client_configuration=configuration)
    except (ConfigException, OSError, ValueError, TypeError, KeyError) as exc:
        reason = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise CredentialsError(
            f"{origin} cannot be used by the Kubernetes client ({reason}); {MALFORMED_FIX}"
        ) from None
    return configuration


class KubeClient:
    """The calls the platform makes, on the official client (see the module doc)."""

    def __init__(self, dynamic: Any) -> None:
        self._dynamic = dynamic
        self._resources: dict[tuple[str, str], Any] = {}
        self._discovery = threading.Lock()  # the client's lazy discovery is not thread-safe
        self._executor = ThreadPoolExecutor(max_workers=API_THREADS, thread_name_prefix="kube-api")
        self._closed = False
        self.writes = 0  # API writes made by this client (tests count them)

    @classmethod
    def from_configuration(cls, configuration: Any) -> KubeClient:
        """A client on the official client's ``configuration`` (blocking: its DynamicClient reads discovery)."""
        from kubernetes import client, dynamic

        # One pooled connection per worker thread: urllib3 discards (and reopens) any beyond its pool's size.
        configuration.connection_pool_maxsize = max(configuration.connection_pool_maxsize or 0, API_THREADS)
        dynamic_client: Callable[..., Any] = dynamic.DynamicClient  # the client carries no annotations
        return cls(dynamic_client(client.ApiClient(configuration)))

    @classmethod
    async def connect(cls) -> KubeClient:
        """Load the credentials and discover the kinds the operator uses (once, before any request)."""
        configuration = official_configuration()

        def build() -> KubeClient:
            kube = cls.from_configuration(configuration)
            for kind, version in API_VERSIONS.items():
                with contextlib.suppress(Exception):  # a CRD not installed yet is found on first use
                    kube._resource(kind, version)
            return kube

        return await asyncio.to_thread(build)

    @property
    def closed(self) -> bool:
        return self._closed

    async def _in_thread(self, call: Callable[[], T]) -> T:
        """``call()`` in one of this client's worker threads, with the caller's context (as `asyncio.to_thread`);
        `KubeClientClosed` once `close` has begun."""
        if self._closed:
            raise KubeClientClosed()
        return await self._run(call)

    async def _run(self, call: Callable[[], T]) -> T:
        context = contextvars.copy_context()
        return await asyncio.get_running_loop().run_in_executor(self._executor, functools.partial(context.run, call))

    async def close(self) -> None:
        """Close the official client's connections, then end the worker threads. Requests asked for before run
        first (the queue is in order); any asked for from here on raises `KubeClientClosed`."""
        if self._closed:
            return
        self._closed = True
        try:
            await self._run(self._dynamic.client.close)
        finally:
            self._executor.shutdown(wait=False)

    def _resource(self, kind: str, api_version: str | None = None) -> Any:
        key = (api_version or API_VERSIONS[kind], kind)
        with self._discovery:
            found = self._resources.get(key)
            if found is None:
                from kubernetes.dynamic.exceptions import ResourceNotFoundError

                try:
                    found = self._dynamic.resources.get(api_version=key[0], kind=kind)
                except ResourceNotFoundError:
                    # A CRD installed after the start: look again with fresh discovery.
                    self._dynamic.resources.invalidate_cache()
                    try:
                        found = self._dynamic.resources.get(api_version=key[0], kind=kind)
                    except ResourceNotFoundError:
                        raise KubeError(404, f"the API server serves no {kind} at {key[0]}") from None
                self._resources[key] = found
            return found

    async def _request(
        self, verb: str, kind: str, call: Callable[[Any], Any], *, api_version: str | None = None, missing: bool = False
    ) -> JSON | None:
        """``call(resource)`` in one of the client's worker threads; the answer as plain JSON."""
        from kubernetes.client.exceptions import ApiException

        if verb != "get":
            self.writes += 1

        def run() -> Any:
            return call(self._resource(kind, api_version))

        try:
            answer = await self._in_thread(run)
        except ApiException as exc:
            if exc.status == 404 and missing:
                return None
            raise KubeError(int(exc.status or 0), _message(exc)) from None
        return answer if isinstance(answer, dict) else {}

    def _options(self) -> dict[str, Any]:
        # The answer as the API server's JSON (no ResourceInstance wrapper), with a timeout on every request.
        return {"serializer": lambda _client, data: data, "_request_timeout": TIMEOUT_S}

    async def get(self, kind: str, namespace: str | None, name: str) -> JSON | None:
        return await self._request(
            "get", kind, lambda r: self._dynamic.get(r, name=name, namespace=namespace, **self._options()), missing=True
        )

    async def list(self, kind: str, namespace: str | None, label_selector: str | None = None) -> list[JSON]:
        result = await self._request(
            "get",
            kind,
            lambda r: self._dynamic.get(r, namespace=namespace, label_selector=label_selector, **self._options()),
        )
        return list((result or {}).get("items", []))

    async def apply(self, obj: JSON) -> JSON:
        """Server-side apply, forcing ownership of the fields we render. A metadata.resourceVersion in ``obj`` is
        a precondition: the API server refuses the apply with 409 if the object changed since it was read."""
        meta = obj["metadata"]
        result = await self._request(
            "apply",
            obj["kind"],
            lambda r: self._dynamic.server_side_apply(
                r,
                body=obj,
                name=meta["name"],
                namespace=meta.get("namespace"),
                field_manager=FIELD_MANAGER,
                force_conflicts=True,
                **self._options(),
            ),
            api_version=obj.get("apiVersion"),
        )
        return result or {}

    async def create(self, obj: JSON) -> JSON | None:
        """Create only: None when the object already exists (another pass made it first; read it instead)."""
        meta = obj["metadata"]
        try:
            return await self._request(
                "create",
                obj["kind"],
                lambda r: self._dynamic.create(r, body=obj, namespace=meta.get("namespace"), **self._options()),
                api_version=obj.get("apiVersion"),
            )
        except KubeError as exc:
            if exc.status == 409:
                return None
            raise

    async def delete(self, kind: str, namespace: str | None, name: str, *, grace_period_s: int | None = None) -> None:
        await self._request(
            "delete",
            kind,
            lambda r: self._dynamic.delete(
                r, name=name, namespace=namespace, grace_period_seconds=grace_period_s, **self._options()
            ),
            missing=True,
        )

    async def _patch(self, kind: str, namespace: str, name: str, body: JSON, content_type: str, sub: str = "") -> JSON:
        def call(resource: Any) -> Any:
            target = resource.subresources[sub] if sub else resource
            return self._dynamic.patch(
                target, body=body, name=name, namespace=namespace, content_type=content_type, **self._options()
            )

        return (await self._request("patch", kind, call)) or {}

    async def patch(self, kind: str, namespace: str, name: str, patch: JSON) -> JSON:
        return await self._patch(kind, namespace, name, patch, "application/merge-patch+json")

    async def patch_strategic(self, kind: str, namespace: str, name: str, patch: JSON, sub: str | None = None) -> JSON:
        """Strategic merge patch (core kinds): lists such as status.conditions merge by their key."""
        return await self._patch(kind, namespace, name, patch, "application/strategic-merge-patch+json", sub or "")

    async def patch_status(
        self, kind: str, namespace: str, name: str, status: JSON, *, resource_version: str | None = None
    ) -> JSON:
        """Merge-patch the status subresource; with ``resource_version`` only at that version (else 409)."""
        body: JSON = {"status": status}
        if resource_version is not None:
            body["metadata"] = {"resourceVersion": resource_version}
        return await self._patch(kind, namespace, name, body, "application/merge-patch+json", "status")


def _message(exc: Any) -> str:
    """The API server's own message from a refusal (its Status object), else the HTTP reason."""
    body = getattr(exc, "body", None)
    if body:
        try:
            message = json.loads(body).get("message")
        except (ValueError, AttributeError):
            message = None
        if message:
            return str(message)
        return str(body)[:500]
    return str(getattr(exc, "reason", "") or "no message")
