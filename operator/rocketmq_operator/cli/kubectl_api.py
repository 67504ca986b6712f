"""The cluster as `kubectl rocketmq` sees it: the official `kubernetes` client behind a few calls on plain JSON.

Contract:

* `connect(kubeconfig, context, namespace)` follows kubectl: the kubeconfig is `--kubeconfig`, else `KUBECONFIG`
  (several files joined by `:`, merged), else `~/.kube/config`, else a pod's service account; the context is
  `--context`, else the kubeconfig's current context; the namespace is `-n`, else the context's namespace
  (the service account's namespace in a pod), else `default`. Anything that keeps it from talking to the API
  server is a `PluginError`: one line naming what was tried and the fix.
* `Cluster` returns objects as the API server's JSON (camelCase dicts, `managedFields` dropped), typed objects
  turned back into JSON by the client's own serializer. A missing object is None; any other API failure is a
  `PluginError` naming the object and the HTTP status. Secrets are never read: there is no call for them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import urllib3
import yaml
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.config import kube_config
from kubernetes.config.config_exception import ConfigException

from rocketmq_operator.api.models import API_GROUP, API_VERSION

JSON = dict[str, Any]
R = TypeVar("R")
# The client's config helpers carry no annotations: typed here once.
_load_incluster_config: Callable[..., None] = config.load_incluster_config
# KUBECONFIG's files merged (`:`-separated; the first file defining a name wins), then one context loaded.
_merger: Callable[[str], Any] = kube_config.KubeConfigMerger
_loader: Callable[..., Any] = kube_config.KubeConfigLoader
FIELD_MANAGER = "kubectl-rocketmq"
DEFAULT_KUBECONFIG = "~/.kube/config"
SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
CREDENTIALS_FIX = "fix: pass --kubeconfig FILE or set KUBECONFIG, or run in a pod with a service account"
TIMEOUT_S = 30.0


class PluginError(Exception):
    """A user-facing failure: printed as one line."""


@dataclass(frozen=True)
class Target:
    """Where the plugin talks to: the kubeconfig (None in a pod), the context and the namespace."""

    kubeconfig: str | None
    context: str | None
    namespace: str
    server: str


def _kubeconfig_path(flag: str | None) -> str:
    return flag or os.environ.get("KUBECONFIG") or DEFAULT_KUBECONFIG


def _exists(paths: str) -> bool:
    return any(Path(p).expanduser().is_file() for p in paths.split(":") if p)


def _in_cluster_namespace() -> str:
    try:
        return (SERVICE_ACCOUNT_DIR / "namespace").read_text(encoding="utf-8").strip() or "default"
    except OSError:
        return "default"


def resolve(kubeconfig: str | None, context: str | None, namespace: str | None) -> tuple[Target, client.ApiClient]:
    """The target and an API client for it (see the module doc)."""
    paths = _kubeconfig_path(kubeconfig)
    if not _exists(paths):
        if kubeconfig is None and os.environ.get("KUBECONFIG") is None and (SERVICE_ACCOUNT_DIR / "token").is_file():
            configuration = client.Configuration()
            try:
                _load_incluster_config(client_configuration=configuration)
            except ConfigException as exc:
                raise PluginError(f"the pod's service account cannot be used: {exc}; {CREDENTIALS_FIX}") from None
            target = Target(None, None, namespace or _in_cluster_namespace(), str(configuration.host))
            return target, client.ApiClient(configuration)
        raise PluginError(f"no kubeconfig at {paths} and not in a pod with a service account; {CREDENTIALS_FIX}")
    try:
        merged = _merger(paths).config
        if merged is None:
            raise ConfigException("no configuration found")
        nodes = merged.safe_get("contexts") or []
        contexts = [n for n in (getattr(c, "value", c) for c in nodes) if isinstance(n, dict)]
        current = merged.safe_get("current-context")
    except (ConfigException, OSError, ValueError, TypeError, AttributeError, yaml.YAMLError) as exc:
        raise PluginError(f"kubeconfig {paths} cannot be read: {exc}; {CREDENTIALS_FIX}") from None
    names = [str(c.get("name")) for c in contexts]
    chosen = context or current
    if not chosen:
        raise PluginError(
            f"kubeconfig {paths} has no current context; fix: pass --context (one of: {', '.join(names) or 'none'})"
        )
    found = next((c for c in contexts if c.get("name") == chosen), None)
    if found is None:
        raise PluginError(
            f"context {chosen!r} is not in kubeconfig {paths} (contexts: {', '.join(names) or 'none'}); "
            "fix: pass one of them as --context"
        )
    configuration = client.Configuration()
    try:
        # As kubectl: an explicit --context needs no current-context in the files.
        _loader(config_dict=merged, active_context=chosen, config_base_path=None).load_and_set(configuration)
    except (ConfigException, OSError, ValueError, TypeError, KeyError) as exc:
        raise PluginError(
            f"context {chosen!r} of kubeconfig {paths} cannot be used: {exc}; {CREDENTIALS_FIX}"
        ) from None
    ns = namespace or (found.get("context") or {}).get("namespace") or "default"
    return Target(paths, chosen, str(ns), str(configuration.host)), client.ApiClient(configuration)


def _strip(obj: JSON) -> JSON:
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    return obj


class Cluster:
    """The calls the plugin makes, on JSON (see the module doc)."""

    def __init__(self, target: Target, api: client.ApiClient) -> None:
        self.target = target
        self.api = api
        self.core = client.CoreV1Api(api)
        self.apps = client.AppsV1Api(api)
        self.custom = client.CustomObjectsApi(api)

    @property
    def namespace(self) -> str:
        return self.target.namespace

    def close(self) -> None:
        close: Callable[[], None] = self.api.close
        close()

    def _json(self, obj: object) -> JSON:
        serialize: Callable[[object], object] = self.api.sanitize_for_serialization
        data = serialize(obj)
        return _strip(data) if isinstance(data, dict) else {}

    def _fail(self, what: str, exc: Exception) -> NoReturn:
        if isinstance(exc, ApiException):
            reason = exc.reason or ""
            if exc.status in (401, 403):
                raise PluginError(
                    f"{what}: HTTP {exc.status} {reason} from {self.target.server}; fix: use credentials allowed to "
                    "do this (kubectl auth can-i), or another --context"
                ) from None
            raise PluginError(f"{what}: HTTP {exc.status} {reason} from {self.target.server}") from None
        raise PluginError(
            f"{what}: cannot reach the API server at {self.target.server} ({type(exc).__name__}); fix: check the "
            f"cluster is up and the context ({self.target.context or 'in-cluster'}) is the right one"
        ) from None

    def _call(self, what: str, request: Callable[[], R]) -> R:
        """One API request; any failure becomes the one-line PluginError that names ``what``."""
        try:
            return request()
        except (ApiException, urllib3.exceptions.HTTPError, OSError) as exc:
            self._fail(f"{what} in namespace {self.namespace}", exc)

    def _read(self, what: str, request: Callable[[], R]) -> R | None:
        """As `_call`, but an object that does not exist (404) is None."""

        def or_none() -> R | None:
            try:
                return request()
            except ApiException as exc:
                if exc.status == 404:
                    return None
                raise

        return self._call(what, or_none)

    # Custom resources ----------------------------------------------------------------------------------------

    def get_custom(self, plural: str, name: str) -> JSON | None:
        obj = self._read(
            f"reading {plural}/{name}",
            lambda: self.custom.get_namespaced_custom_object(
                API_GROUP, API_VERSION, self.namespace, plural, name, _request_timeout=TIMEOUT_S
            ),
        )
        return _strip(obj) if isinstance(obj, dict) else None

    def patch_custom(self, plural: str, name: str, patch: JSON) -> JSON:
        """A JSON merge patch (an annotation set to None is removed)."""
        obj = self._call(
            f"patching {plural}/{name}",
            lambda: self.custom.patch_namespaced_custom_object(
                API_GROUP,
                API_VERSION,
                self.namespace,
                plural,
                name,
                patch,
                field_manager=FIELD_MANAGER,
                _content_type="application/merge-patch+json",
                _request_timeout=TIMEOUT_S,
            ),
        )
        return _strip(obj) if isinstance(obj, dict) else {}

    # Core and apps -------------------------------------------------------------------------------------------

    def list_pods(self, label_selector: str) -> list[JSON]:
        pods = self._call(
            f"listing pods {label_selector}",
            lambda: self.core.list_namespaced_pod(
                self.namespace, label_selector=label_selector, _request_timeout=TIMEOUT_S
            ),
        )
        return sorted((self._json(p) for p in pods.items), key=lambda p: str(p["metadata"]["name"]))

    def get_pod(self, name: str) -> JSON | None:
        pod = self._read(
            f"reading pod {name}",
            lambda: self.core.read_namespaced_pod(name, self.namespace, _request_timeout=TIMEOUT_S),
        )
        return None if pod is None else self._json(pod)

    def pod_log(self, name: str, container: str, *, previous: bool) -> str:
        """The container's log (the previous instance's with ``previous``); raises PluginError when there is
        none (a container that never restarted has no previous log: HTTP 400)."""
        which = "previous log" if previous else "log"
        return str(
            self._call(
                f"{which} of pod {name} container {container}",
                lambda: self.core.read_namespaced_pod_log(
                    name, self.namespace, container=container, previous=previous, _request_timeout=TIMEOUT_S
                ),
            )
        )

    def list_events(self) -> list[JSON]:
        events = self._call(
            "listing events", lambda: self.core.list_namespaced_event(self.namespace, _request_timeout=TIMEOUT_S)
        )
        return [self._json(e) for e in events.items]

    def get_secret_metadata(self, name: str) -> JSON | None:
        """A Secret's metadata only: the plugin never prints or keeps a Secret's data."""
        secret = self._read(
            f"reading secret {name}",
            lambda: self.core.read_namespaced_secret(name, self.namespace, _request_timeout=TIMEOUT_S),
        )
        return None if secret is None else {"metadata": self._json(secret).get("metadata") or {}}

    def annotate_secret(self, name: str, annotations: dict[str, str]) -> None:
        """A JSON merge patch of the Secret's annotations (nothing else of it is touched)."""
        self._call(
            f"annotating secret {name}",
            lambda: self.core.patch_namespaced_secret(
                name,
                self.namespace,
                {"metadata": {"annotations": annotations}},
                field_manager=FIELD_MANAGER,
                _content_type="application/merge-patch+json",
                _request_timeout=TIMEOUT_S,
            ),
        )

    def get_stateful_set(self, name: str) -> JSON | None:
        sts = self._read(
            f"reading statefulset {name}",
            lambda: self.apps.read_namespaced_stateful_set(name, self.namespace, _request_timeout=TIMEOUT_S),
        )
        return None if sts is None else self._json(sts)

    def patch_stateful_set(self, name: str, patch: JSON) -> JSON:
        """A strategic merge patch of the StatefulSet (the client's default for a dict body)."""
        sts = self._call(
            f"patching statefulset {name}",
            lambda: self.apps.patch_namespaced_stateful_set(
                name,
                self.namespace,
                patch,
                field_manager=FIELD_MANAGER,
                _content_type="application/strategic-merge-patch+json",
                _request_timeout=TIMEOUT_S,
            ),
        )
        return self._json(sts)


def connect(kubeconfig: str | None, context: str | None, namespace: str | None) -> Cluster:
    target, api = resolve(kubeconfig, context, namespace)
    return Cluster(target, api)
