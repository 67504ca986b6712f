"""The local placement: the same renderers as Kubernetes, with 127.0.0.1 addresses, local ports and paths.

Contract:

* `port_needs(resources)` lists the ports a set of resources needs (see `ports.PortNeed`), keyed
  `<replica>.<port>`: `namesrv` and `controller` (the DLedger peer port) for ControllerGroup replicas,
  `listen` for brokers (which also occupy listen-2, listen-1 and listen+1).
* Broker metrics (spec.metrics) are on locally too: each broker's Prometheus exporter listens on
  127.0.0.1:<listen-1>, the port of its own block that `ports.BROKER_OFFSETS` already reserves and checks free,
  so several brokers on one host never collide and no new port is allocated (an existing state directory keeps
  its ports). spec.metrics.port, a pod's port, is not used here; the rendered broker.conf names the port
  (metricsPromExporterPort). It is not one of the process's `ports`: start-up waits on those, not on metrics.
* `controller_placement` / `broker_placement` build `render.config` placements from an allocation; configs
  are then rendered by `render.config.controller_config`, `namesrv_config` and `broker_config` unchanged. The
  platform defaults only shrink the footprint (facts §6 "Shrinking a local test"); the user's
  `brokerConfig`/`controllerConfig` keys still win, as on Kubernetes.
* `build_state(...)` is the whole desired state (`state.LocalState` without pids): every process, its
  rendered config text, its java argv (`distribution.java_command`, small heaps, TLS off unless spec.tls), its
  paths. A process of a group or Proxy with spec.tls gets `render.jvm.tls_flags` on its files in the layout.
  It does no I/O besides what `java_command` does to name the java executable.
* Replica names are those of the pods: `<BrokerGroup>-<ordinal>`, `<ControllerGroup>-<ordinal>` and, for
  standalone name servers, `<ControllerGroup>-namesrv-<ordinal>`.
* `jvm_not_applied(old, new)`: one line per spec.jvm size (heap, directMemory) a change sets that the local
  platform does not apply (its JVMs run the fixed small sizes below).
* Raises `PlacementError` for manifests the local platform cannot run (a controllerRef to a ControllerGroup
  that is not among the files, clashing names).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rocketmq_operator.api.models import (
    AnyResource,
    BrokerGroup,
    ConsumerGroup,
    ControllerGroup,
    HAMode,
    Proxy,
    Topic,
    User,
)
from rocketmq_operator.api.validation import given_twice, repeated, resource_key
from rocketmq_operator.platforms.local.distribution import java_command
from rocketmq_operator.platforms.local.layout import StateLayout
from rocketmq_operator.platforms.local.ports import BROKER_OFFSETS, PROXY_OFFSETS, SINGLE, PortNeed
from rocketmq_operator.platforms.local.state import GroupInfo, LocalState, ReplicaProcess
from rocketmq_operator.render.config import (
    BrokerPlacement,
    ControllerPlacement,
    ReplicaPlacement,
    broker_config,
    controller_config,
    namesrv_config,
    properties_text,
    proxy_config,
    proxy_config_text,
)
from rocketmq_operator.render.jvm import mutual_tls, tls_flags

LOCALHOST = "127.0.0.1"

# Heaps on this machine (the spec's jvm.heap is sized for a pod; spec.jvm.extraOptions are still appended).
# Every replica of every group shares one machine (the quickstart's 1Gi heaps plus as much direct memory would be
# about 7 GiB for its three brokers), so spec.jvm.heap and directMemory are not applied here: `jvm_not_applied`
# says so wherever a change of them would otherwise look like it did something (`local apply`, `explain --diff`).
BROKER_HEAP = "256m"
BROKER_DIRECT_MEMORY = "256m"
NAMESRV_WITH_CONTROLLER_HEAP = "192m"
CONTROLLER_HEAP = "128m"
NAMESRV_HEAP = "128m"
PROXY_HEAP = "192m"

BROKER_PLATFORM_DEFAULTS: Mapping[str, str] = {
    "mappedFileSizeCommitLog": str(64 * 1024 * 1024),
    "mappedFileSizeConsumeQueue": str(30_000 * 20),  # a multiple of the 20-byte entry
    "messageIndexEnable": "false",  # an index file is ~400 MB
    # The timer wheel maps ~37 MiB plus as much direct memory; left on when the manifests have a Proxy (its gRPC
    # consumers pop, which needs it: `broker_placement`).
    "timerWheelEnable": "false",
    "diskMaxUsedSpaceRatio": "95",
}
CONTROLLER_PLATFORM_DEFAULTS: Mapping[str, str] = {
    "mappedFileSize": str(8 * 1024 * 1024),  # DLedger entry files (default 1 GiB)
}

Resource = AnyResource

HEADER = "Rendered by rocketmq-operator local for {kind} {name}; edit the manifest, not this."


class PlacementError(ValueError):
    """The manifests cannot be run by the local platform as they are."""


@dataclass(frozen=True)
class _Process:
    name: str
    role: str
    group: str
    kind: str
    ordinal: int
    phase: int
    ports: dict[str, int]
    address: str
    conf: Mapping[str, object]
    heap: str
    direct_memory: str | None
    extra: tuple[str, ...]


def _broker_phase(bg: BrokerGroup, ordinal: int) -> int:
    """Start order: name servers and controllers (0), then brokers (1); in the classic modes the configured
    master (ordinal 0) comes before its slaves (2), so a slave never registers first and acts as master while
    the real master is still coming online (slave-acting-master's pre-online then stalls)."""
    if bg.spec.ha_mode == HAMode.CONTROLLER.value or ordinal == 0:
        return 1
    return 2


def _controller_names(cg: ControllerGroup) -> list[str]:
    return [f"{cg.metadata.name}-{i}" for i in range(cg.spec.replicas)]


def _namesrv_names(cg: ControllerGroup) -> list[str]:
    if not cg.spec.standalone:
        return []
    count = cg.spec.name_servers.replicas or cg.spec.replicas
    return [f"{cg.metadata.name}-namesrv-{i}" for i in range(count)]


def _broker_names(bg: BrokerGroup) -> list[str]:
    return [f"{bg.metadata.name}-{i}" for i in range(bg.spec.replicas)]


def _proxy_names(proxy: Proxy) -> list[str]:
    return [f"{proxy.metadata.name}-{i}" for i in range(proxy.spec.replicas)]


def _proxies(resources: Sequence[Resource]) -> list[Proxy]:
    return [r for r in resources if isinstance(r, Proxy)]


def _controllers(resources: Sequence[Resource]) -> list[ControllerGroup]:
    return [r for r in resources if isinstance(r, ControllerGroup)]


def _brokers(resources: Sequence[Resource]) -> list[BrokerGroup]:
    return [r for r in resources if isinstance(r, BrokerGroup)]


def jvm_not_applied(old: BrokerGroup | ControllerGroup, new: BrokerGroup | ControllerGroup) -> list[str]:
    """What a change of spec.jvm.heap or spec.jvm.directMemory does here: nothing, said plainly (not a roll, and
    not a silent "no change")."""
    if isinstance(new, BrokerGroup):
        heap, direct = f"-Xmx{BROKER_HEAP}", f"-XX:MaxDirectMemorySize={BROKER_DIRECT_MEMORY}"
    else:
        heaps = {CONTROLLER_HEAP, NAMESRV_HEAP} if new.spec.standalone else {NAMESRV_WITH_CONTROLLER_HEAP}
        heap, direct = " or ".join(f"-Xmx{h}" for h in sorted(heaps)), "the JVM's default direct memory"
    notes: list[str] = []
    if old.spec.jvm.heap != new.spec.jvm.heap:
        notes.append(f"heap: not applied on the local platform (local JVMs run {heap})")
    if old.spec.jvm.direct_memory != new.spec.jvm.direct_memory:
        notes.append(f"directMemory: not applied on the local platform (local JVMs run {direct})")
    return notes


def port_needs(resources: Sequence[Resource]) -> list[PortNeed]:
    needs: list[PortNeed] = []
    for cg in _controllers(resources):
        for name in _controller_names(cg):
            if not cg.spec.standalone:
                needs.append(PortNeed(f"{name}.namesrv", SINGLE))
            needs.append(PortNeed(f"{name}.controller", SINGLE))
            if cg.spec.type == "jraft":
                needs.append(PortNeed(f"{name}.raft", SINGLE))
        needs.extend(PortNeed(f"{name}.namesrv", SINGLE) for name in _namesrv_names(cg))
    for bg in _brokers(resources):
        needs.extend(PortNeed(f"{name}.listen", BROKER_OFFSETS) for name in _broker_names(bg))
    for proxy in _proxies(resources):
        needs.extend(PortNeed(f"{name}.grpc", PROXY_OFFSETS) for name in _proxy_names(proxy))
    return needs


def _addr(port: int) -> str:
    return f"{LOCALHOST}:{port}"


def controller_endpoints(cg: ControllerGroup, ports: Mapping[str, int]) -> tuple[list[str], list[str]]:
    """(name servers, controllers) of a ControllerGroup as `127.0.0.1:port` lists."""
    controllers = [_addr(ports[f"{n}.controller"]) for n in _controller_names(cg)]
    if cg.spec.standalone:
        name_servers = [_addr(ports[f"{n}.namesrv"]) for n in _namesrv_names(cg)]
    else:
        name_servers = [_addr(ports[f"{n}.namesrv"]) for n in _controller_names(cg)]
    return name_servers, controllers


def controller_placement(cg: ControllerGroup, ports: Mapping[str, int], layout: StateLayout) -> ControllerPlacement:
    _, peers = controller_endpoints(cg, ports)
    key = "controller" if cg.spec.standalone else "namesrv"
    replicas = [ReplicaPlacement(ports[f"{n}.{key}"], str(layout.data(n)), LOCALHOST) for n in _controller_names(cg)]
    name_servers = [ReplicaPlacement(ports[f"{n}.namesrv"], str(layout.data(n)), LOCALHOST) for n in _namesrv_names(cg)]
    raft = [_addr(ports[f"{n}.raft"]) for n in _controller_names(cg)] if cg.spec.type == "jraft" else []
    return ControllerPlacement(
        peers=peers,
        replicas=replicas,
        raft_peers=raft,
        name_server_replicas=name_servers,
        platform_defaults=dict(CONTROLLER_PLATFORM_DEFAULTS),
    )


def find_controller_group(owner: BrokerGroup | Proxy, resources: Sequence[Resource]) -> ControllerGroup | None:
    if owner.spec.controller_ref is None:
        return None
    for cg in _controllers(resources):
        if cg.metadata.name == owner.spec.controller_ref.name and cg.metadata.namespace == owner.metadata.namespace:
            return cg
    return None


def proxy_ports(name: str, ports: Mapping[str, int]) -> dict[str, int]:
    """A local proxy's ports: gRPC (what clients dial), remoting, and its Prometheus exporter, one block."""
    grpc = ports[f"{name}.grpc"]
    return {"grpc": grpc, "remoting": grpc + 1, "metrics": grpc + 2}


def proxy_name_servers_here(proxy: Proxy, resources: Sequence[Resource], ports: Mapping[str, int]) -> list[str]:
    """The name servers a local proxy reads routes from: spec.nameServers, else its ControllerGroup's."""
    if proxy.spec.name_servers:
        return list(proxy.spec.name_servers)
    cg = find_controller_group(proxy, resources)
    if cg is None:
        ref = proxy.spec.controller_ref.name if proxy.spec.controller_ref else ""
        raise PlacementError(
            f"Proxy/{proxy.metadata.name}: spec.controllerRef.name '{ref}' is not a ControllerGroup in these "
            "manifests; the local platform runs only what it is given; fix: add the ControllerGroup's file with "
            "another -f, or set spec.nameServers"
        )
    return controller_endpoints(cg, ports)[0]


def proxy_conf(
    proxy: Proxy, name: str, resources: Sequence[Resource], ports: Mapping[str, int], layout: StateLayout
) -> dict[str, object]:
    """rmq-proxy.json of one local proxy: the renderer Kubernetes uses, with this proxy's own ports (every proxy
    shares 127.0.0.1, so its exporter cannot keep spec.metrics.port) and, with spec.tls, its own certificate (the
    files its -Dtls.server.* flags name: `build_state`)."""
    own = proxy_ports(name, ports)
    tls_files = (str(layout.tls_cert(name)), str(layout.tls_key(name))) if proxy.spec.tls.enabled else None
    conf = proxy_config(
        proxy, proxy_name_servers_here(proxy, resources, ports), own["grpc"], own["remoting"], tls_files
    )
    if proxy.spec.metrics.enabled:
        conf |= {"metricsPromExporterHost": LOCALHOST, "metricsPromExporterPort": own["metrics"]}
    return conf


def broker_placement(
    bg: BrokerGroup,
    cg: ControllerGroup | None,
    ports: Mapping[str, int],
    layout: StateLayout,
    *,
    timer_wheel: bool = False,
) -> BrokerPlacement:
    """`timer_wheel`: keep RocketMQ's timer wheel on (its default) instead of the platform's saving: a proxy's
    gRPC consumers pop, and the broker refuses a pop ("forbidden because timerWheelEnable is false")."""
    controllers: list[str] = []
    if bg.spec.name_servers:
        name_servers = list(bg.spec.name_servers)
        if cg is not None:
            _, controllers = controller_endpoints(cg, ports)
    elif cg is not None:
        name_servers, controllers = controller_endpoints(cg, ports)
    else:
        ref = bg.spec.controller_ref.name if bg.spec.controller_ref else ""
        raise PlacementError(
            f"BrokerGroup/{bg.metadata.name}: spec.controllerRef.name '{ref}' is not a ControllerGroup in these "
            "manifests; the local platform runs only what it is given; fix: add the ControllerGroup's file "
            "with another -f, or set spec.nameServers"
        )
    if HAMode(bg.spec.ha_mode) is HAMode.CONTROLLER and not controllers:
        raise PlacementError(
            f"BrokerGroup/{bg.metadata.name}: controller mode needs the ControllerGroup "
            f"'{bg.spec.controller_ref.name if bg.spec.controller_ref else ''}' among the files; fix: add it with -f"
        )
    replicas = [
        ReplicaPlacement(
            ports[f"{n}.listen"], str(layout.data(n) / "store"), LOCALHOST, metrics_port=ports[f"{n}.listen"] - 1
        )
        for n in _broker_names(bg)
    ]
    return BrokerPlacement(
        name_servers=name_servers,
        controllers=controllers,
        replicas=replicas,
        platform_defaults={
            k: v for k, v in BROKER_PLATFORM_DEFAULTS.items() if not (timer_wheel and k == "timerWheelEnable")
        },
    )


def manifest_digest(resources: Sequence[Resource]) -> str:
    """Digest of what the resources mean (not of the file text): same digest ⇔ same groups."""
    dumped = sorted(
        (r.model_dump(mode="json", by_alias=True, exclude={"status"}) for r in resources),
        key=lambda d: (str(d.get("kind")), json.dumps(d.get("metadata"), sort_keys=True)),
    )
    return hashlib.sha256(json.dumps(dumped, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def check_names(resources: Sequence[Resource]) -> None:
    for _, _, key in repeated([resource_key(r) for r in resources]):  # the check `validate` makes
        raise PlacementError(given_twice(key))
    owners: dict[str, str] = {}
    for r in resources:
        if isinstance(r, ControllerGroup):
            names = _controller_names(r) + _namesrv_names(r)
        elif isinstance(r, BrokerGroup):
            names = _broker_names(r)
        elif isinstance(r, Proxy):
            names = _proxy_names(r)
        else:
            continue  # Topics, ConsumerGroups and Users run no process
        for name in names:
            if name in owners:
                raise PlacementError(
                    f"{r.kind}/{r.metadata.name}: process name '{name}' clashes with {owners[name]}; "
                    "fix: rename one of the groups"
                )
            owners[name] = f"{r.kind}/{r.metadata.name}"
    if not _controllers(resources) and not _brokers(resources):
        raise PlacementError("no BrokerGroup or ControllerGroup in the files")


def _processes(resources: Sequence[Resource], ports: Mapping[str, int], layout: StateLayout) -> list[_Process]:
    out: list[_Process] = []
    for cg in _controllers(resources):
        placement = controller_placement(cg, ports, layout)
        name = cg.metadata.name
        extra = tuple(cg.spec.jvm.extra_options)
        for i, replica in enumerate(_controller_names(cg)):
            conf = controller_config(cg, i, placement)
            raft = {"raft": ports[f"{replica}.raft"]} if cg.spec.type == "jraft" else {}
            if cg.spec.standalone:
                port = ports[f"{replica}.controller"]
                out.append(
                    _Process(
                        replica, "controller", name, "ControllerGroup", i, 0, {"controller": port, **raft}, _addr(port),
                        conf, CONTROLLER_HEAP, None, extra,
                    )
                )  # fmt: skip
            else:
                ns_port, ctl_port = ports[f"{replica}.namesrv"], ports[f"{replica}.controller"]
                out.append(
                    _Process(
                        replica, "namesrv", name, "ControllerGroup", i, 0,
                        {"namesrv": ns_port, "controller": ctl_port, **raft}, _addr(ns_port),
                        conf, NAMESRV_WITH_CONTROLLER_HEAP, None, extra,
                    )
                )  # fmt: skip
        for j, replica in enumerate(_namesrv_names(cg)):
            port = ports[f"{replica}.namesrv"]
            conf = namesrv_config(cg, j, placement)
            out.append(
                _Process(
                    replica, "namesrv", name, "ControllerGroup", j, 0, {"namesrv": port}, _addr(port),
                    conf, NAMESRV_HEAP, None, extra,
                )
            )  # fmt: skip
    for bg in _brokers(resources):
        ref = find_controller_group(bg, resources)
        bplacement = broker_placement(bg, ref, ports, layout, timer_wheel=bool(_proxies(resources)))
        extra = tuple(bg.spec.jvm.extra_options)
        for i, replica in enumerate(_broker_names(bg)):
            port = ports[f"{replica}.listen"]
            conf = broker_config(bg, i, bplacement)
            out.append(
                _Process(
                    replica, "broker", bg.metadata.name, "BrokerGroup", i, _broker_phase(bg, i),
                    {"listen": port, "vip": port - 2, "ha": port + 1}, _addr(port),
                    conf, BROKER_HEAP, BROKER_DIRECT_MEMORY, extra,
                )
            )  # fmt: skip
    for proxy in _proxies(resources):
        extra = tuple(proxy.spec.jvm.extra_options)
        for i, replica in enumerate(_proxy_names(proxy)):
            own = proxy_ports(replica, ports)
            # Started after the brokers (phase 3): a proxy only reads routes, and its JVM would otherwise take CPU
            # from the brokers' start on a small machine. Start-up waits on its gRPC and remoting ports.
            out.append(
                _Process(
                    replica, "proxy", proxy.metadata.name, "Proxy", i, 3,
                    {"grpc": own["grpc"], "remoting": own["remoting"]}, _addr(own["grpc"]),
                    proxy_conf(proxy, replica, resources, ports, layout), PROXY_HEAP, None, extra,
                )
            )  # fmt: skip
    return out


def _groups(resources: Sequence[Resource], ports: Mapping[str, int]) -> list[GroupInfo]:
    groups: list[GroupInfo] = []
    for cg in _controllers(resources):
        name_servers, controllers = controller_endpoints(cg, ports)
        groups.append(
            GroupInfo(
                name=cg.metadata.name,
                kind="ControllerGroup",
                replicas=_controller_names(cg) + _namesrv_names(cg),
                name_servers=name_servers,
                controllers=controllers,
            )
        )
    for proxy in _proxies(resources):
        groups.append(
            GroupInfo(
                name=proxy.metadata.name,
                kind="Proxy",
                replicas=_proxy_names(proxy),
                name_servers=proxy_name_servers_here(proxy, resources, ports),
                controllers=[],
            )
        )
    for bg in _brokers(resources):
        ref = find_controller_group(bg, resources)
        name_servers, controllers = controller_endpoints(ref, ports) if ref is not None else ([], [])
        groups.append(
            GroupInfo(
                name=bg.metadata.name,
                kind="BrokerGroup",
                replicas=_broker_names(bg),
                name_servers=list(bg.spec.name_servers) or name_servers,
                controllers=controllers,
                controller_group=ref.metadata.name if ref is not None else None,
                controller_mode=HAMode(bg.spec.ha_mode) is HAMode.CONTROLLER,
            )
        )
    return groups


def render_configs(resources: Sequence[Resource], ports: Mapping[str, int], layout: StateLayout) -> dict[str, str]:
    """Config file text per process name (what `local up` writes to conf/<replica>.conf)."""
    return {p.name: _config_text(p) for p in _processes(resources, ports, layout)}


def _config_text(p: _Process) -> str:
    if p.kind == "Proxy":
        return proxy_config_text(p.conf)  # JSON (rmq-proxy.json), which has no comment for the header
    return properties_text({k: str(v) for k, v in p.conf.items()}, HEADER.format(kind=p.kind, name=p.group))


def build_state(
    resources: Sequence[Resource],
    ports: Mapping[str, int],
    layout: StateLayout,
    *,
    files: Sequence[str],
    distribution: str,
    rocketmq_version: str,
) -> LocalState:
    check_names(resources)
    replicas: list[ReplicaProcess] = []
    tls_on = {
        r.metadata.name: r
        for r in resources
        if isinstance(r, BrokerGroup | ControllerGroup | Proxy) and r.spec.tls.enabled
    }
    for p in _processes(resources, ports, layout):
        run_config = layout.run_config(p.name)
        tls = p.group in tls_on
        cert_flags = (
            tls_flags(
                str(layout.tls_cert(p.name)), str(layout.tls_key(p.name)), str(layout.tls_ca),
                **mutual_tls(tls_on[p.group]),
            )
            if tls
            else []
        )  # fmt: skip
        argv = java_command(
            p.role,
            run_config,
            heap=p.heap,
            direct_memory=p.direct_memory,
            extra=(*p.extra, *cert_flags),
            user_home=layout.data(p.name),
            home=distribution,
            tls=tls,
        )
        replicas.append(
            ReplicaProcess(
                name=p.name,
                role=p.role,
                group=p.group,
                kind=p.kind,
                ordinal=p.ordinal,
                phase=p.phase,
                address=p.address,
                ports=dict(p.ports),
                argv=argv,
                config=str(layout.config(p.name)),
                run_config=str(run_config),
                data_dir=str(layout.data(p.name)),
                log=str(layout.log(p.name)),
            )
        )
    dumped: list[dict[str, Any]] = [r.model_dump(mode="json", by_alias=True, exclude_none=True) for r in resources]
    return LocalState(
        state_dir=str(layout.root),
        manifest_digest=manifest_digest(resources),
        files=list(files),
        resources=dumped,
        rocketmq_version=rocketmq_version,
        distribution=distribution,
        groups=_groups(resources, ports),
        replicas=replicas,
    )


def load_resources(state: LocalState) -> list[Resource]:
    """The typed resources recorded in a state (for status: the BrokerGroup specs; the proxies' spec.auth; the
    Users the supervisor's AuthPolicy asserts)."""
    out: list[Resource] = []
    for doc in state.resources:
        if doc.get("kind") == "BrokerGroup":
            out.append(BrokerGroup.model_validate(doc))
        elif doc.get("kind") == "ControllerGroup":
            out.append(ControllerGroup.model_validate(doc))
        elif doc.get("kind") == "Topic":
            out.append(Topic.model_validate(doc))
        elif doc.get("kind") == "ConsumerGroup":
            out.append(ConsumerGroup.model_validate(doc))
        elif doc.get("kind") == "Proxy":
            out.append(Proxy.model_validate(doc))
        elif doc.get("kind") == "User":
            out.append(User.model_validate(doc))
    return out
