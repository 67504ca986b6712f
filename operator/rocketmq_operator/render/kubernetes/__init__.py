"""Kubernetes objects for BrokerGroups, ControllerGroups and Proxies: pure, deterministic dicts.

Same input, same output, byte for byte (a test pins golden files): the operator applies exactly what
`rocketmq-operator render` prints, adding only owner references, except that an existing StatefulSet keeps the
claim sizes it was created with (claim templates are immutable; the PVCs are resized in place). Names and labels
follow docs/contracts.md.
"""

from __future__ import annotations

from collections.abc import Sequence

from rocketmq_operator.api.models import AnyResource, BrokerGroup, ControllerGroup, Proxy
from rocketmq_operator.render.kubernetes.broker_group import BROKER_PORTS, broker_config_files, render_broker_group
from rocketmq_operator.render.kubernetes.controller_group import CONTROLLER_PORTS, render_controller_group
from rocketmq_operator.render.kubernetes.kinds import config_hash
from rocketmq_operator.render.kubernetes.names import (
    ANNOTATION_CONFIG_HASH,
    ANNOTATION_FENCE,
    ANNOTATION_RESTARTED_AT,
    ANNOTATION_SWITCHOVER_TO,
    JSON,
    LABEL_BROKER_ID,
    LABEL_GROUP,
    LABEL_ROLE,
    READINESS_GATE_IN_SYNC,
    RenderError,
    broker_image,
    broker_placement,
    controller_addresses,
    controller_image,
    controller_placement,
    controller_ref_name,
    labels,
    name_server_addresses,
    namespace_of,
    selector,
)
from rocketmq_operator.render.kubernetes.proxy import proxy_endpoint, render_proxy

__all__ = [
    "ANNOTATION_CONFIG_HASH",
    "ANNOTATION_FENCE",
    "ANNOTATION_RESTARTED_AT",
    "ANNOTATION_SWITCHOVER_TO",
    "BROKER_PORTS",
    "CONTROLLER_PORTS",
    "JSON",
    "LABEL_BROKER_ID",
    "LABEL_GROUP",
    "LABEL_ROLE",
    "READINESS_GATE_IN_SYNC",
    "RenderError",
    "broker_config_files",
    "broker_image",
    "broker_placement",
    "config_hash",
    "controller_addresses",
    "controller_image",
    "controller_placement",
    "labels",
    "name_server_addresses",
    "namespace_of",
    "proxy_endpoint",
    "render_all",
    "render_broker_group",
    "render_controller_group",
    "render_proxy",
    "selector",
]


def render_all(resources: Sequence[AnyResource]) -> list[JSON]:
    """Every object for a set of manifests; BrokerGroups and Proxies find their ControllerGroup among them."""
    controllers = {(namespace_of(r), r.metadata.name): r for r in resources if isinstance(r, ControllerGroup)}
    out: list[JSON] = []
    for r in resources:
        if isinstance(r, ControllerGroup):
            out.extend(render_controller_group(r))
    for r in resources:
        if isinstance(r, BrokerGroup):
            cg = controllers.get((namespace_of(r), controller_ref_name(r))) if r.spec.controller_ref else None
            out.extend(render_broker_group(r, cg))
    for r in resources:
        if isinstance(r, Proxy):
            ref = r.spec.controller_ref.name if r.spec.controller_ref else ""
            out.extend(render_proxy(r, controllers.get((namespace_of(r), ref)) if ref else None))
    return out
