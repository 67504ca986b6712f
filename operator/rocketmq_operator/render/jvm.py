"""JVM flags for RocketMQ 5.x processes on JDK 17, shared by the Kubernetes renderer and the local platform.

Contract:

* Pure: no I/O, no subprocess; imports the standard library and `rocketmq_operator.api.quantity` only.
* `MAIN_CLASSES[role]` is the Java main class of a role (`namesrv`, `broker`, `controller`, `tools`, `proxy`).
* `jdk17_module_flags(role)` is the list of `--add-opens`/`--add-exports` flags the pinned RocketMQ release
  (see `rocketmq_operator.platforms.local.distribution.ROCKETMQ_VERSION`) needs on JDK 17 for that role.
  It is the measured minimum, not the community folklore list: see `docs/notes/local-start.md`.
  - controller (standalone or embedded in the namesrv with `enableControllerInNamesrv=true`):
    `--add-opens=java.base/java.lang=ALL-UNNAMED`. Without it the static init of Hessian's `SerializerFactory`
    (reached from `ReplicasInfoManager.<clinit>`) prints eight `InaccessibleObjectException` stack traces
    for `java.lang.StackTraceElement` fields; the controller still boots, but its Hessian state is half
    initialised. The namesrv role gets the same flag because it may host the controller.
  - proxy: none known yet (it runs on Kubernetes only so far; measure it when the local platform runs it).
  - broker, tools: none. In RocketMQ 5.5.0 the store frees and inspects mapped buffers through Netty's
    `PlatformDependent` (Unsafe.invokeCleaner / directBufferAddress) instead of casting to
    `sun.nio.ch.DirectBuffer`, and `DefaultMappedFile`'s `isLoaded0` lookup fails with the (caught)
    NoSuchMethodException on JDK 14+, so `--add-exports sun.nio.ch`, `--add-opens java.nio` and
    `--add-opens jdk.internal.ref` (apache/rocketmq#9887, for older releases) are not needed.
* `TLS_DISABLED_FLAGS` turns off the remoting server's default TLS "permissive" mode. In that mode every
  remoting server (the broker has two) loads netty-tcnative/BoringSSL and generates a self-signed certificate
  at start: measured on 2 cores, namesrv start 6-7 s → 2-3 s and RSS −110 MiB, broker start 8.5 s → 3-4 s
  and RSS −160 MiB with the flag. Plain-text clients work either way. The local platform uses it by default;
  `jvm_options` does not include it (whether a cluster accepts TLS clients is a deployment decision).
* `tls_flags(cert, key, ca, require_clients=, present=)`: the flags of a process whose group has spec.tls on
  (enforcing, verified; mutual TLS with spec.tls.clientAuth: Required); `mutual_tls(resource)` which of the two.
* `jvm_options(role, heap, direct_memory)` is the complete JVM flag list (heap, direct memory, GC, module flags)
  that the Kubernetes renderer puts in `JAVA_OPTS` and the local platform puts on the java command line.
  Sizes are JVM sizes (`256m`, `2g`, plain bytes) or Kubernetes quantities (`256Mi`, `2Gi`, `500M`): lower-case
  `k`/`m`/`g` suffixes are read the JVM way (binary), everything else as a Kubernetes quantity.
  A broker always gets `-XX:MaxDirectMemorySize` (the heap size when `direct_memory` is None), so the
  container memory it needs is predictable; other roles get it only when `direct_memory` is given.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

from rocketmq_operator.api.models import BrokerGroup, ControllerGroup, Proxy
from rocketmq_operator.api.quantity import QuantityError, jvm_size

ROLES: tuple[str, ...] = ("namesrv", "broker", "controller", "tools", "proxy")

MAIN_CLASSES: Mapping[str, str] = MappingProxyType(
    {
        "namesrv": "org.apache.rocketmq.namesrv.NamesrvStartup",
        "broker": "org.apache.rocketmq.broker.BrokerStartup",
        "controller": "org.apache.rocketmq.controller.ControllerStartup",
        "tools": "org.apache.rocketmq.tools.command.MQAdminStartup",
        "proxy": "org.apache.rocketmq.proxy.ProxyStartup",
    }
)

_OPEN_JAVA_LANG = "--add-opens=java.base/java.lang=ALL-UNNAMED"

JDK17_FLAGS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "namesrv": (_OPEN_JAVA_LANG,),
        "broker": (),
        "controller": (_OPEN_JAVA_LANG,),
        "tools": (),
        "proxy": (),
    }
)

TLS_DISABLED_FLAGS: tuple[str, ...] = ("-Dtls.server.mode=disabled",)


def tls_flags(cert: str, key: str, ca: str, *, require_clients: bool = False, present: bool = False) -> list[str]:
    """RocketMQ's TLS switches (`TlsSystemConfig`, one set per JVM) for a process of a group with spec.tls on:
    every remoting server it runs refuses plain text (enforcing) and presents ``cert`` (PEM chain) with ``key``
    (unencrypted PKCS#8 PEM, as Netty reads it); every remoting client it runs (to name servers, controllers,
    other brokers) speaks TLS and checks the peer's chain against ``ca``. Test mode (a self-signed certificate
    made at start, and no verification) is off. `tls.config.file` points nowhere so that no file on the host
    overrides these.

    ``require_clients`` (spec.tls.clientAuth: Required): the servers also ask every client for a certificate and
    verify it against ``ca`` (`tls.server.authClient`: without it Netty would accept any), and the process presents
    ``cert`` as a client. ``present``: it presents its certificate as a client without requiring one (a proxy in
    front of groups that require it)."""
    flags = [
        "-Dtls.server.mode=enforcing",
        "-Dtls.test.mode.enable=false",
        f"-Dtls.server.certPath={cert}",
        f"-Dtls.server.keyPath={key}",
        f"-Dtls.server.trustCertPath={ca}",
        f"-Dtls.server.need.client.auth={'require' if require_clients else 'none'}",
        "-Dtls.enable=true",
        "-Dtls.client.authServer=true",
        f"-Dtls.client.trustCertPath={ca}",
        f"-Dtls.config.file={cert}.no-such-file",
    ]
    if require_clients:
        flags.insert(6, "-Dtls.server.authClient=true")
    if require_clients or present:
        flags += [f"-Dtls.client.certPath={cert}", f"-Dtls.client.keyPath={key}"]
    return flags


# GC settings of the official runserver.sh/runbroker.sh for JDK >= 9, minus the ones that only make sense for
# multi-gigabyte heaps (G1HeapRegionSize=16m would leave a 256m heap with 16 regions) and minus GC logging.
_GC_FLAGS: tuple[str, ...] = (
    "-XX:+UseG1GC",
    "-XX:G1ReservePercent=25",
    "-XX:InitiatingHeapOccupancyPercent=30",
    "-XX:SoftRefLRUPolicyMSPerMB=0",
    "-XX:-OmitStackTraceInFastThrow",
)

_JVM_NATIVE_SIZE = re.compile(r"^[1-9][0-9]*[kmg]?$")


def _check_role(role: str) -> None:
    if role not in MAIN_CLASSES:
        raise ValueError(f"unknown RocketMQ role {role!r}; expected one of {', '.join(ROLES)}")


def jvm_size_flag(size: str) -> str:
    """A size for -Xmx/-XX:MaxDirectMemorySize: `256m` stays `256m`, `2Gi` → `2g`, `500M` → `500000000`."""
    text = size.strip()
    if _JVM_NATIVE_SIZE.match(text):
        return text
    try:
        value = jvm_size(text)
    except QuantityError as exc:
        raise ValueError(f"{size!r} is neither a JVM size (256m, 2g) nor a quantity (256Mi, 2Gi)") from exc
    if value == "0":
        raise ValueError(f"{size!r} is zero")
    return value


def jdk17_module_flags(role: str) -> list[str]:
    """The `--add-opens`/`--add-exports` flags `role` needs on JDK 17 (a fresh list; see the module docstring)."""
    _check_role(role)
    return list(JDK17_FLAGS[role])


def jvm_options(role: str, heap: str, direct_memory: str | None) -> list[str]:
    """Every JVM flag for `role`: fixed heap, direct memory, GC settings and the JDK 17 module flags."""
    _check_role(role)
    size = jvm_size_flag(heap)
    opts = ["-server", f"-Xms{size}", f"-Xmx{size}"]
    if direct_memory is not None:
        opts.append(f"-XX:MaxDirectMemorySize={jvm_size_flag(direct_memory)}")
    elif role == "broker":
        opts.append(f"-XX:MaxDirectMemorySize={size}")
    opts.extend(_GC_FLAGS)
    opts.extend(jdk17_module_flags(role))
    return opts


def mutual_tls(resource: BrokerGroup | ControllerGroup | Proxy) -> dict[str, bool]:
    """`render.jvm.tls_flags`' mutual-TLS switches for a resource: a group with spec.tls.clientAuth Required
    requires its clients' certificates and presents its own; a Proxy with it (matching its groups) presents its own
    to them, and requires none of its gRPC clients, which cannot present one (rocketmq-clients 5.x)."""
    mutual = resource.spec.tls.mutual
    if isinstance(resource, Proxy):
        return {"require_clients": False, "present": mutual}
    return {"require_clients": mutual, "present": mutual}
