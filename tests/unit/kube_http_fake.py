"""A small in-process Kubernetes API server over real HTTP, for the `kubectl rocketmq` plugin's unit tests.

The plugin uses the official `kubernetes` client; pointed at this server (a kubeconfig from `kubeconfig()`),
the client's real request building, serialization and deserialization run. `FakeApiServer` holds objects by
their API path, answers GET (an object, or a list filtered by `labelSelector`), PATCH (merge and strategic merge
patches are applied as JSON merge patches, enough for the maps the plugin patches) and pod logs, records every
request in `requests`, and calls `on_patch` hooks after a patch, which lets a test play the operator. Every
request must carry the kubeconfig's bearer token (401 otherwise).
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import yaml

JSON = dict[str, Any]
TOKEN = "t0ken"
GROUP_PREFIX = "/apis/rocketmq-operator.dev/v1alpha1"
PLURALS = {
    "BrokerGroup": (GROUP_PREFIX, "brokergroups"),
    "ControllerGroup": (GROUP_PREFIX, "controllergroups"),
    "Pod": ("/api/v1", "pods"),
    "Event": ("/api/v1", "events"),
    "Secret": ("/api/v1", "secrets"),
    "ConfigMap": ("/api/v1", "configmaps"),
    "StatefulSet": ("/apis/apps/v1", "statefulsets"),
}
LIST_KINDS = {"pods": ("PodList", "v1"), "events": ("EventList", "v1"), "secrets": ("SecretList", "v1")}


def merge(target: JSON, patch: JSON) -> JSON:
    """JSON merge patch (RFC 7386)."""
    out = copy.deepcopy(target)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    content_type: str | None
    body: Any


@dataclass
class FakeApiServer:
    objects: dict[str, JSON] = field(default_factory=dict)
    logs: dict[tuple[str, str, str, bool], str] = field(default_factory=dict)  # (ns, pod, container, previous)
    requests: list[Request] = field(default_factory=list)
    on_patch: list[Callable[[FakeApiServer, str, JSON], None]] = field(default_factory=list)
    url: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)

    @staticmethod
    def path_of(kind: str, namespace: str, name: str) -> str:
        prefix, plural = PLURALS[kind]
        return f"{prefix}/namespaces/{namespace}/{plural}/{name}"

    def put(self, obj: JSON) -> JSON:
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        meta.setdefault("namespace", "default")
        meta.setdefault("uid", f"uid-{meta['name']}")
        meta.setdefault("resourceVersion", "1")
        self.objects[self.path_of(obj["kind"], meta["namespace"], meta["name"])] = obj
        return obj

    def get(self, kind: str, namespace: str, name: str) -> JSON | None:
        return self.objects.get(self.path_of(kind, namespace, name))

    def paths_requested(self) -> list[str]:
        return [r.path for r in self.requests]

    # --- HTTP ---

    def answer(self, method: str, raw_path: str, headers: dict[str, str], body: bytes) -> tuple[int, str, bytes]:
        parts = urlsplit(raw_path)
        query = parse_qs(parts.query)
        data = json.loads(body) if body else None
        with self.lock:
            self.requests.append(Request(method, parts.path, query, headers.get("content-type"), data))
            if headers.get("authorization") != f"Bearer {TOKEN}":
                return _status(401, "Unauthorized")
            path = parts.path.rstrip("/")
            if method == "GET" and path.endswith("/log"):
                pod_path = path[: -len("/log")]
                ns, pod = pod_path.split("/")[4], pod_path.split("/")[6]
                previous = query.get("previous", ["false"])[0] == "true"
                container = query.get("container", [""])[0]
                text = self.logs.get((ns, pod, container, previous))
                if text is None:
                    return _status(400, f'previous terminated container "{container}" in pod "{pod}" not found')
                return 200, "text/plain", text.encode()
            if method == "GET" and path in self.objects:
                return 200, "application/json", json.dumps(self.objects[path]).encode()
            if method == "GET":
                plural = path.rsplit("/", 1)[-1]
                if plural in LIST_KINDS:
                    items = [o for p, o in self.objects.items() if p.rsplit("/", 1)[0] == path]
                    items = [o for o in items if _selected(o, query.get("labelSelector", [""])[0])]
                    kind, version = LIST_KINDS[plural]
                    doc = {"kind": kind, "apiVersion": version, "metadata": {"resourceVersion": "9"}, "items": items}
                    return 200, "application/json", json.dumps(doc).encode()
                return _status(404, f"{path} not found")
            if method == "PATCH" and path in self.objects:
                if isinstance(data, list):
                    return _status(415, "json patch not supported by the fake")
                self.objects[path] = merge(self.objects[path], data)
                hooks = list(self.on_patch)
            elif method == "PATCH":
                return _status(404, f"{path} not found")
            else:
                return _status(405, f"{method} not supported by the fake")
        for hook in hooks:
            hook(self, path, data)
        with self.lock:
            return 200, "application/json", json.dumps(self.objects[path]).encode()


def _selected(obj: JSON, selector: str) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for term in filter(None, selector.split(",")):
        key, _, value = term.partition("=")
        if labels.get(key) != value:
            return False
    return True


def _status(code: int, message: str) -> tuple[int, str, bytes]:
    doc = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message, "code": code}
    return code, "application/json", json.dumps(doc).encode()


def _handler(api: FakeApiServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            code, content_type, payload = api.answer(self.command, self.path, headers, body)
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = _serve
        do_PATCH = _serve
        do_POST = _serve
        do_DELETE = _serve

        def log_message(self, format: str, *args: Any) -> None:
            del format, args

    return Handler


@contextmanager
def serve() -> Iterator[FakeApiServer]:
    api = FakeApiServer()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(api))
    api.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield api
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def kubeconfig(path: Path, server: str, contexts: dict[str, str | None], current: str | None) -> Path:
    """A kubeconfig with one cluster and user (the bearer token) and a context per name (value: its namespace)."""
    doc: JSON = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "fake", "cluster": {"server": server}}],
        "users": [{"name": "user", "user": {"token": TOKEN}}],
        "contexts": [
            {"name": name, "context": {"cluster": "fake", "user": "user", **({"namespace": ns} if ns else {})}}
            for name, ns in contexts.items()
        ],
    }
    if current is not None:
        doc["current-context"] = current
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path
