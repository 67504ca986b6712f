"""TLS on Kubernetes: the certificate Secret every pod of a group (or a Proxy) with spec.tls mounts, issued and
renewed by the operator from its namespace's authority (unless spec.tls.secretName names the user's own, e.g.
cert-manager's), the operator's own client trusting it, and the controllers restarted after a renewal.

Contract:

* One authority per namespace, the Secret `rocketmq-operator-tls-ca` (ca.crt, ca.key; `control.certificates`),
  made on first need and again when expired; every group of the namespace trusts it, so brokers and their
  controllers verify each other. `authority(kube, namespace, now)` also replaces it (`core.tls.plan_authority`):
  when asked (the annotation `rocketmq-operator.dev/rotate` set to a new token, which `kubectl rocketmq
  rotate-ca` does, with `rocketmq-operator.dev/overlap`) or in its last year, a successor signs from then on,
  ca.crt holds both (the successor first) and bridge.crt the successor signed by the predecessor, served after
  every leaf; once the overlap is over and every pod mounting an operator-issued certificate was created after
  its Secret held the successor, the predecessor and the bridge leave. What it waits for is in the annotation
  `rocketmq-operator.dev/authority-state`. Every write is at the version read: many passes call it at once.
* `certificate_objects(kube, resource, namespace, now)` (the reconciler, on every change and resync): with
  spec.tls and no secretName, the `<group>-tls` Secret (tls.crt, tls.key as PKCS#8, ca.crt) when it is missing,
  not from the current authority, or due within renewBefore (`core.tls.plan_tls`; the issue time is in its
  annotation); nothing when it is fine. With secretName: nothing to write, and (reason, message) when that
  Secret lacks one of its keys. The certificate names the group's DNS names (`*.<headless>.<ns>.svc…`); pods
  are dialled by IP, so clients verify the chain and not the name, as RocketMQ's own Java clients do. A Proxy's
  (`<proxy>-tls`) names its Service (`<proxy>`, `<proxy>.<ns>`, `<proxy>.<ns>.svc…`) and localhost: gRPC clients
  dial the Service by name and check it. The proxies reload a renewed Secret themselves (nothing restarts).
* `trust_group(kube, client, resource, namespace, addresses, ca_dir)`: the operator's one client speaks TLS to
  ``addresses``, trusting the group's ca.crt (written under ``ca_dir`` by content hash), and, where the group
  requires client certificates (spec.tls.clientAuth: Required), presenting the group's own certificate. False
  when the CA cannot be read yet (the pass then observes nothing over plain text either: the pods refuse it).
* `controller_restart(resource, secret, pods, now)`: the pod to delete after a renewal — a process that cannot
  reload its certificate (a controller, or a name server hosting one) that started before the certificate was
  issued, one at a time and only when every such pod has been ready for SETTLE_S (`core.tls.plan_tls`).
  Brokers and standalone name servers reload the mounted files themselves (kubelet updates a Secret volume in
  place), so a renewal restarts none of them.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import hashlib
import logging
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rocketmq_operator.api.models import BrokerGroup, ControllerGroup, Proxy, duration_seconds
from rocketmq_operator.control.certificates import (
    Authority,
    CertificateError,
    CertificateInfo,
    held_or_new_authority,
    issue,
)
from rocketmq_operator.core.tls import (
    AUTHORITY_RENEW_BEFORE_S,
    DEFAULT_OVERLAP_S,
    SETTLE_S,
    AuthorityActionKind,
    AuthorityFacts,
    HeldCertificate,
    TlsActionKind,
    authority_state,
    overlap_over,
    plan_authority,
    plan_tls,
    state_after_rotation,
)
from rocketmq_operator.platforms.kubernetes.auth import secret_data
from rocketmq_operator.platforms.kubernetes.kube import KubeClient, KubeError
from rocketmq_operator.remoting import RemotingClient
from rocketmq_operator.remoting.tls import ClientTls
from rocketmq_operator.render.kubernetes import labels
from rocketmq_operator.render.kubernetes.names import (
    ANNOTATION_AUTHORITY_OVERLAP as ANNOTATION_OVERLAP,
)
from rocketmq_operator.render.kubernetes.names import (
    ANNOTATION_AUTHORITY_STATE,
    ANNOTATION_ROTATED_FOR,
    tls_secret_name,
)
from rocketmq_operator.render.kubernetes.names import (
    ANNOTATION_ROTATE_AUTHORITY as ANNOTATION_ROTATE,
)
from rocketmq_operator.render.kubernetes.names import (
    TLS_AUTHORITY_SECRET as AUTHORITY_SECRET,
)

JSON = dict[str, Any]
AUTHORITY_NAME = "rocketmq-operator namespace CA"
ANNOTATION_ISSUED_AT = "rocketmq-operator.dev/issued-at"
ANNOTATION_ROTATION_STARTED = "rocketmq-operator.dev/rotation-started-at"
BRIDGE_KEY = "bridge.crt"
log = logging.getLogger("rocketmq_operator.kubernetes.tls")
CLUSTER_DOMAIN = "cluster.local"
TLS_CA_DIR = Path(tempfile.gettempdir()) / "rocketmq-operator-tls"
"""Where the operator writes the authorities it trusts (the operator pod's /tmp is an emptyDir)."""


def _encode(values: dict[str, str]) -> dict[str, str]:
    return {k: base64.b64encode(v.encode()).decode() for k, v in values.items()}


def _secret(name: str, namespace: str, values: dict[str, str], meta: JSON | None = None) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace, **(meta or {})},
        "type": "Opaque",
        "data": _encode(values),
    }


def _annotations(secret: JSON | None) -> dict[str, str]:
    return dict((((secret or {}).get("metadata") or {}).get("annotations")) or {})


def _float(text: str | None) -> float | None:
    try:
        return float(text) if text else None
    except ValueError:
        return None


def _timestamp(text: object) -> float | None:
    """An API timestamp (RFC 3339, `...Z`) as epoch seconds; None when absent."""
    return dt.datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp() if text else None


def _created(obj: JSON) -> float | None:
    return _timestamp((obj.get("metadata") or {}).get("creationTimestamp"))


async def trusting_only_predecessor(kube: KubeClient, namespace: str, trust: str) -> tuple[str, ...]:
    """The operator's pods of the namespace that mount an operator-issued certificate Secret and may have read
    their trust before it held ``trust``: the Secret does not hold it yet, or the pod was created before the
    Secret was issued with it (a JVM reads its trust at start; a container restarted in place may read an old
    copy of the volume, so creation counts, not the container's start)."""
    pods = await kube.list("Pod", namespace, label_selector="app.kubernetes.io/managed-by=rocketmq-operator")
    secrets: dict[str, JSON | None] = {}
    out: list[str] = []
    for pod in pods:
        for volume in (pod.get("spec") or {}).get("volumes") or []:
            name = (volume.get("secret") or {}).get("secretName")
            if not name:
                continue
            if name not in secrets:
                secrets[name] = await kube.get("Secret", namespace, name)
            secret = secrets[name]
            issued = issued_at(secret)
            if issued is None:
                continue  # not issued by the operator (the user's own, e.g. cert-manager's): not this authority
            created = _created(pod)
            if secret_data(secret or {}).get("ca.crt") != trust or created is None or created < issued:
                out.append(str(pod["metadata"]["name"]))
    return tuple(sorted(set(out)))


def _authority_facts(annotations: dict[str, str], held: Authority, now: float) -> AuthorityFacts:
    token = annotations.get(ANNOTATION_ROTATE) or ""
    predecessor = CertificateInfo.of(held.predecessor).not_after if held.predecessor is not None else None
    try:
        overlap = duration_seconds(annotations[ANNOTATION_OVERLAP]) if annotations.get(ANNOTATION_OVERLAP) else None
    except ValueError:
        overlap = None
    return AuthorityFacts(
        not_after=CertificateInfo.of(held.signer.cert_pem).not_after,
        request_pending=bool(token) and token != annotations.get(ANNOTATION_ROTATED_FOR),
        predecessor_not_after=predecessor,
        rotation_started_at=_float(annotations.get(ANNOTATION_ROTATION_STARTED)),
        overlap_s=DEFAULT_OVERLAP_S if overlap is None else overlap,
        renew_before_s=AUTHORITY_RENEW_BEFORE_S,
    )


async def authority(kube: KubeClient, namespace: str, now: float) -> Authority:
    """The namespace's authority, made (and stored) when there is none or it has expired, and rotated as
    `core.tls.plan_authority` decides (see the contract).

    Two groups of one namespace are reconciled at once (examples/tls.yaml applies both): were each to make and
    apply an authority, the second would overwrite the first, the first group's certificate would no longer be
    from the current authority, and its next pass would reissue it and restart its controllers under clients.
    So an authority is created only if there is none, replaced only at the version read, and when another pass
    got there first, that one is read and used.
    """
    for _ in range(5):
        current = await kube.get("Secret", namespace, AUTHORITY_SECRET)
        data = secret_data(current or {})
        pair, new = held_or_new_authority(data.get("ca.crt"), data.get("ca.key"), AUTHORITY_NAME, now)
        annotations = _annotations(current)
        token = annotations.get(ANNOTATION_ROTATE) or ""
        if new:  # none, or expired: nothing trusts the old one any more, so no overlap either
            made, action = Authority(pair, pair.cert_pem, None), None
            ours = {ANNOTATION_ROTATED_FOR: token}
        else:
            held = Authority.held(pair.cert_pem, pair.key_pem, data.get(BRIDGE_KEY))
            facts = _authority_facts(annotations, held, now)
            if overlap_over(facts, now):
                only_old = await trusting_only_predecessor(kube, namespace, held.trust)
                facts = dataclasses.replace(facts, trusting_only_predecessor=only_old)
            action = plan_authority(facts, now)
            state = authority_state(action, facts, now)
            steady = action.kind in (AuthorityActionKind.KEEP, AuthorityActionKind.WAIT)
            if steady and annotations.get(ANNOTATION_AUTHORITY_STATE, state) == state:
                return held  # written only when it changes: many passes read it every 30 s
            made = held.rotated(AUTHORITY_NAME, now) if action.kind is AuthorityActionKind.ROTATE else held
            made = made.retired() if action.kind is AuthorityActionKind.RETIRE else made
            rotating = action.kind is AuthorityActionKind.ROTATE
            if rotating:  # said as what it is from now on: the overlap and its end
                state = state_after_rotation(facts, now)
            ours = {
                ANNOTATION_ROTATED_FOR: token if rotating else annotations.get(ANNOTATION_ROTATED_FOR, ""),
                ANNOTATION_AUTHORITY_STATE: state,
            }
            started = f"{now:.3f}" if rotating else annotations.get(ANNOTATION_ROTATION_STARTED)
            if started and action.kind is not AuthorityActionKind.RETIRE:
                ours[ANNOTATION_ROTATION_STARTED] = started
        values = {"ca.crt": made.trust, "ca.key": made.signer.key_pem}
        if made.bridge is not None:
            values[BRIDGE_KEY] = made.bridge
        secret = _secret(AUTHORITY_SECRET, namespace, values, {"annotations": ours})
        if current is None:
            if await kube.create(secret) is not None:
                return made
            continue
        secret["metadata"]["resourceVersion"] = current["metadata"].get("resourceVersion")
        try:
            await kube.apply(secret)
        except KubeError as exc:
            if exc.status != 409:
                raise
            if action is not None and action.kind in (AuthorityActionKind.KEEP, AuthorityActionKind.WAIT):
                return made  # only the state line was to be written: another pass changed it; the next says it
            continue
        if action is not None and action.kind is not AuthorityActionKind.KEEP:
            log.info("Secret %s/%s: %s", namespace, AUTHORITY_SECRET, action.describe())
        return made
    raise KubeError(409, f"Secret {namespace}/{AUTHORITY_SECRET} changed under every attempt to make the authority")


def dns_names(resource: BrokerGroup | ControllerGroup | Proxy, namespace: str) -> list[str]:
    """Every name a pod or Service of the group answers to: the headless Services' pods and the Services. A
    Proxy's: its Service by every name a client in the cluster may dial, and localhost (a port-forward)."""
    name = resource.metadata.name
    if isinstance(resource, Proxy):
        return [
            name,
            f"{name}.{namespace}",
            f"{name}.{namespace}.svc",
            f"{name}.{namespace}.svc.{CLUSTER_DOMAIN}",
            "localhost",
        ]
    services = [f"{name}-headless", name]
    if isinstance(resource, BrokerGroup):
        services.append(f"{name}-master")
    elif resource.spec.standalone:
        services.append(f"{name}-namesrv-headless")
    out: list[str] = []
    for service in services:
        for suffix in (f"{namespace}.svc", f"{namespace}.svc.{CLUSTER_DOMAIN}"):
            out.append(f"{service}.{suffix}")
            if service.endswith("-headless"):
                out.append(f"*.{service}.{suffix}")
    return out


def _held(resource: BrokerGroup | ControllerGroup | Proxy, secret: JSON | None, ca: Authority) -> HeldCertificate:
    renew_before = duration_seconds(resource.spec.tls.renew_before)
    data = secret_data(secret or {})
    info: CertificateInfo | None = None
    try:
        info = CertificateInfo.of(data["tls.crt"]) if data.get("tls.crt") and data.get("tls.key") else None
    except CertificateError:
        info = None
    name = resource.metadata.name
    if info is None:
        return HeldCertificate(name, None, None, False, False, True, True, None, renew_before)
    return HeldCertificate(
        replica=name,
        not_after=info.not_after,
        issued_at=issued_at(secret),
        # From the signer, served with the bridge exactly while there is one, trusting what every peer trusts.
        current_authority=ca.serves(data["tls.crt"]) and data.get("ca.crt") == ca.trust,
        names_address=set(dns_names(resource, str(resource.metadata.namespace))) <= set(info.dns_names),
        reloads=True,
        running=True,
        started_at=None,
        renew_before_s=renew_before,
    )


def issued_at(secret: JSON | None) -> float | None:
    text = (((secret or {}).get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_ISSUED_AT)
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


async def certificate_objects(
    kube: KubeClient, resource: BrokerGroup | ControllerGroup | Proxy, namespace: str, now: float | None = None
) -> tuple[list[JSON], tuple[str, str] | None]:
    """The group's certificate Secret to apply (issued now) or nothing; or (reason, message) when blocked."""
    tls = resource.spec.tls
    if not tls.enabled:
        return [], None
    now = time.time() if now is None else now
    name = tls_secret_name(resource)
    assert name is not None
    if tls.secret_name is not None:
        data = secret_data(await kube.get("Secret", namespace, name) or {})
        missing = [k for k in ("tls.crt", "tls.key", "ca.crt") if not data.get(k)]
        if missing:
            return [], (
                "TlsSecretMissing",
                f"{resource.kind}/{resource.metadata.name}: spec.tls.secretName: Secret {name!r} "
                f"{'not found' if len(missing) == 3 else 'has no ' + ', '.join(missing)} in namespace "
                f"{namespace!r}; rule: it holds tls.crt, tls.key (PKCS#8) and ca.crt, as cert-manager writes "
                "them; fix: point a cert-manager Certificate (privateKey.encoding: PKCS8) at this Secret, or "
                "remove spec.tls.secretName to let the operator issue one",
            )
        return [], None
    ca = await authority(kube, namespace, now)
    current = await kube.get("Secret", namespace, name)
    if not plan_tls([_held(resource, current, ca)], now):
        return [], None
    lifetime = duration_seconds(tls.duration)
    pair = issue(ca.signer, resource.metadata.name, dns_names(resource, namespace), [], lifetime, now)
    component = {"BrokerGroup": "broker", "ControllerGroup": "controller", "Proxy": "proxy"}[resource.kind]
    meta: JSON = {
        "labels": labels(resource.metadata.name, component),
        "annotations": {ANNOTATION_ISSUED_AT: f"{now:.3f}"},
    }
    values = {"tls.crt": ca.chain(pair.cert_pem), "tls.key": pair.key_pem, "ca.crt": ca.trust}
    return [_secret(name, namespace, values, meta)], None


ANNOTATION_CLIENT_CERT = "rocketmq-operator.dev/tls-issued-at"
"""On the pod template of a BrokerGroup or Proxy with spec.tls.clientAuth Required: when the certificate its pods
present was issued. A JVM reads its client certificate once, at start, so a renewal changes the template and the
operator's roll restarts the pods onto it (brokers slaves first, the master after a switchover)."""


def client_certificate_template(objects: list[JSON], secret: JSON | None, resource: Any) -> None:
    """Stamp the issue time of ``secret`` (the certificate Secret being applied, or the one in place) on the pod
    template of a mutual-TLS BrokerGroup or Proxy in ``objects`` (see ANNOTATION_CLIENT_CERT)."""
    if not isinstance(resource, BrokerGroup | Proxy) or not resource.spec.tls.mutual or secret is None:
        return
    issued = issued_at(secret)
    if issued is None:  # the user's Secret (cert-manager): a certificate starts when it is issued
        try:
            issued = CertificateInfo.of(secret_data(secret).get("tls.crt", "")).not_before
        except CertificateError:
            return
    for obj in objects:
        if obj.get("kind") in ("StatefulSet", "Deployment") and obj["metadata"]["name"] == resource.metadata.name:
            template = obj["spec"]["template"].setdefault("metadata", {})
            template.setdefault("annotations", {})[ANNOTATION_CLIENT_CERT] = f"{issued:.0f}"


async def trust_group(
    kube: KubeClient,
    client: RemotingClient,
    resource: BrokerGroup | ControllerGroup,
    namespace: str,
    addresses: Sequence[str],
    ca_dir: Path,
) -> bool:
    name = tls_secret_name(resource)
    if name is None:
        return True
    data = secret_data(await kube.get("Secret", namespace, name) or {})
    ca = data.get("ca.crt")
    if not ca:
        return False
    ca_dir.mkdir(parents=True, exist_ok=True)
    tls = ClientTls(str(_by_content(ca_dir, "ca", ".crt", ca)), check_hostname=False)
    if resource.spec.tls.mutual:
        # The group asks every client for a certificate from its authority: the operator presents the group's own
        # (whichever issuer made it, the group's peers trust it), read at each new connection.
        if not data.get("tls.crt") or not data.get("tls.key"):
            return False
        cert = _by_content(ca_dir, "client", ".crt", data["tls.crt"])
        key = _by_content(ca_dir, "client", ".key", data["tls.key"])
        tls = ClientTls(tls.ca_file, check_hostname=False, cert_file=str(cert), key_file=str(key))
    for addr in addresses:
        client.pool.tls_by_addr[addr] = tls
    return True


def _by_content(directory: Path, prefix: str, suffix: str, text: str) -> Path:
    """``text`` in a file of ``directory`` named by its hash (mode 0600), written once: a changed Secret is a new
    file, which the client's next connection reads."""
    path = directory / f"{prefix}-{hashlib.sha256(text.encode()).hexdigest()[:16]}{suffix}"
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.chmod(0o600)
        tmp.replace(path)
    return path


def _started_at(pod: JSON) -> float | None:
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        started = ((status.get("state") or {}).get("running") or {}).get("startedAt")
        if started:
            return _timestamp(started)
    return None


def _ready(pod: JSON) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def controller_restart(cg: ControllerGroup, secret: JSON | None, pods: Sequence[JSON], now: float) -> str | None:
    """The controller pod to delete so that it loads a renewed certificate, if one is due (see the contract)."""
    if not cg.spec.tls.enabled:
        return None
    issued = issued_at(secret)
    info_after: float | None = None
    not_before: float | None = None
    try:
        crt = secret_data(secret or {}).get("tls.crt")
        if crt:
            info = CertificateInfo.of(crt)
            info_after, not_before = info.not_after, info.not_before
    except CertificateError:
        info_after = None
    if info_after is None:
        return None
    if issued is None:
        issued = not_before  # the user's Secret (cert-manager): a certificate starts when it is issued
    held = [
        HeldCertificate(
            replica=str(pod["metadata"]["name"]),
            not_after=info_after,
            issued_at=issued,
            current_authority=True,
            names_address=True,
            reloads=False,
            # A pod being deleted still reads Ready until its container stops: it is no settled replica, so
            # nothing is restarted (deleted again) meanwhile.
            running=_ready(pod) and not pod["metadata"].get("deletionTimestamp"),
            started_at=_started_at(pod),
            renew_before_s=0.0,
        )
        for pod in sorted(pods, key=lambda p: str(p["metadata"]["name"]))
    ]
    if len(held) < cg.spec.replicas:
        return None  # a pod is missing: never restart another now
    restarts = [a for a in plan_tls(held, now, settle_s=SETTLE_S) if a.kind is TlsActionKind.RESTART]
    return restarts[0].replica if restarts else None
