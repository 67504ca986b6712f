"""TLS on Kubernetes (platforms/kubernetes/tls.py) against the in-memory API: the operator's authority and the
certificate Secret it issues, renews and leaves alone; a user's Secret (cert-manager) checked for its keys; the
operator's client trusting a group's authority per address; and the one controller pod restarted after a
renewal, only when the others have settled."""

from __future__ import annotations

import asyncio
import base64
import copy
import datetime as dt
import ssl
from pathlib import Path
from typing import Any

import pytest
from kube_fake import FakeApi

from rocketmq_operator.api.models import BrokerGroup, ControllerGroup
from rocketmq_operator.control.certificates import CertificateInfo, pem_certificates, signed_by
from rocketmq_operator.platforms.kubernetes.auth import secret_data
from rocketmq_operator.platforms.kubernetes.kube import KubeError
from rocketmq_operator.platforms.kubernetes.tls import (
    ANNOTATION_AUTHORITY_STATE,
    ANNOTATION_OVERLAP,
    ANNOTATION_ROTATE,
    AUTHORITY_SECRET,
    BRIDGE_KEY,
    authority,
    certificate_objects,
    client_certificate_template,
    controller_restart,
    dns_names,
    trust_group,
)
from rocketmq_operator.remoting.connection import ClientPool
from rocketmq_operator.remoting.tls import ClientTls

JSON = dict[str, Any]
NOW = 1_800_000_000.0
DAY = 86400.0
BG: JSON = {
    "apiVersion": "rocketmq-operator.dev/v1alpha1",
    "kind": "BrokerGroup",
    "metadata": {"name": "broker-a", "namespace": "ns"},
    "spec": {"replicas": 2, "controllerRef": {"name": "ctl"}, "tls": {"enabled": True, "duration": "240h",
                                                                      "renewBefore": "48h"}},
}  # fmt: skip
CG: JSON = {
    "apiVersion": "rocketmq-operator.dev/v1alpha1",
    "kind": "ControllerGroup",
    "metadata": {"name": "ctl", "namespace": "ns"},
    "spec": {"replicas": 3, "tls": {"enabled": True}},
}


def _bg(**tls: Any) -> BrokerGroup:
    doc = copy.deepcopy(BG)
    doc["spec"]["tls"].update(tls)
    return BrokerGroup.model_validate(doc)


def _cg(**tls: Any) -> ControllerGroup:
    doc = copy.deepcopy(CG)
    doc["spec"]["tls"].update(tls)
    return ControllerGroup.model_validate(doc)


def _apply(api: FakeApi, objects: list[JSON]) -> None:
    for obj in objects:
        asyncio.run(api.apply(obj))


def _issue(api: FakeApi, resource: Any, now: float) -> tuple[list[JSON], Any]:
    return asyncio.run(certificate_objects(api, resource, "ns", now))  # type: ignore[arg-type]


def test_the_operator_issues_a_certificate_for_the_groups_names_from_the_namespace_authority() -> None:
    api = FakeApi()
    objects, blocked = _issue(api, _bg(), NOW)
    assert blocked is None and [o["metadata"]["name"] for o in objects] == ["broker-a-tls"]
    data = secret_data(objects[0])
    ca = secret_data(api.objects[("Secret", "ns", AUTHORITY_SECRET)])["ca.crt"]
    assert data["ca.crt"] == ca and signed_by(data["tls.crt"], ca)
    assert data["tls.key"].startswith("-----BEGIN PRIVATE KEY-----")  # PKCS#8, as Netty reads it
    info = CertificateInfo.of(data["tls.crt"])
    assert set(info.dns_names) == set(dns_names(_bg(), "ns"))
    assert "*.broker-a-headless.ns.svc.cluster.local" in info.dns_names and "broker-a-master.ns.svc" in info.dns_names
    assert info.not_after == pytest.approx(NOW + 240 * 3600, abs=1)
    assert objects[0]["metadata"]["annotations"]["rocketmq-operator.dev/issued-at"] == f"{NOW:.3f}"


def test_a_good_certificate_is_left_alone_and_renewed_renew_before_its_expiry() -> None:
    api = FakeApi()
    objects, _ = _issue(api, _bg(), NOW)
    _apply(api, objects)
    assert _issue(api, _bg(), NOW + DAY) == ([], None)
    assert _issue(api, _bg(), NOW + 8 * DAY - 60) == ([], None)  # 48 h and a minute left: not due yet
    renewed, _ = _issue(api, _bg(), NOW + 9 * DAY)  # 24 h left < renewBefore 48 h
    assert renewed and secret_data(renewed[0])["tls.crt"] != secret_data(objects[0])["tls.crt"]


def test_a_new_authority_reissues_every_certificate() -> None:
    api = FakeApi()
    objects, _ = _issue(api, _bg(), NOW)
    _apply(api, objects)
    del api.objects[("Secret", "ns", AUTHORITY_SECRET)]
    again, _ = _issue(api, _bg(), NOW + DAY)
    assert again and secret_data(again[0])["ca.crt"] != secret_data(objects[0])["ca.crt"]


def _user_secret(**values: str) -> JSON:
    data = {k: base64.b64encode(v.encode()).decode() for k, v in values.items()}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "cert", "namespace": "ns"}, "data": data}


@pytest.mark.parametrize(
    ("secret", "says"),
    [(None, "Secret 'cert' not found"), (_user_secret(**{"tls.crt": "x", "ca.crt": "y"}), "has no tls.key")],
    ids=["missing", "a key missing"],
)
def test_a_users_secret_must_hold_the_three_keys(secret: JSON | None, says: str) -> None:
    api = FakeApi()
    if secret is not None:
        api.put(secret)
    objects, blocked = _issue(api, _bg(secretName="cert"), NOW)
    assert objects == [] and blocked is not None and blocked[0] == "TlsSecretMissing"
    assert blocked[1].startswith("BrokerGroup/broker-a: spec.tls.secretName: ") and says in blocked[1]
    assert "rule:" in blocked[1] and "fix:" in blocked[1] and "\n" not in blocked[1]
    assert ("Secret", "ns", AUTHORITY_SECRET) not in api.objects  # a user's Secret needs no authority of ours


def test_tls_off_needs_nothing() -> None:
    api = FakeApi()
    doc = copy.deepcopy(BG)
    doc["spec"]["tls"] = {"enabled": False}
    assert asyncio.run(certificate_objects(api, BrokerGroup.model_validate(doc), "ns", NOW)) == ([], None)  # type: ignore[arg-type]
    assert api.log == []


def test_the_operator_trusts_the_groups_authority_for_its_addresses_only(tmp_path: Path) -> None:
    api = FakeApi()
    objects, _ = _issue(api, _bg(), NOW)
    _apply(api, objects)

    class Client:
        pool = ClientPool()

    client = Client()
    assert asyncio.run(trust_group(api, client, _bg(), "ns", ["10.0.0.1:10911"], tmp_path))  # type: ignore[arg-type]
    tls = client.pool.tls_by_addr["10.0.0.1:10911"]
    assert tls.check_hostname is False and Path(str(tls.ca_file)).read_text() == secret_data(objects[0])["ca.crt"]
    assert set(client.pool.tls_by_addr) == {"10.0.0.1:10911"}
    missing = FakeApi()
    assert not asyncio.run(trust_group(missing, client, _cg(), "ns", ["ctl-0:9878"], tmp_path))  # type: ignore[arg-type]


def test_with_client_auth_the_operator_presents_the_groups_own_certificate_and_the_pods_roll_on_renewal(
    tmp_path: Path,
) -> None:
    api = FakeApi()
    mutual = _bg(clientAuth="Required")
    objects, _ = _issue(api, mutual, NOW)
    _apply(api, objects)

    class Client:
        pool = ClientPool()

    client = Client()
    assert asyncio.run(trust_group(api, client, mutual, "ns", ["10.0.0.1:10911"], tmp_path))  # type: ignore[arg-type]
    tls = client.pool.tls_by_addr["10.0.0.1:10911"]
    data = secret_data(objects[0])
    assert Path(str(tls.cert_file)).read_text() == data["tls.crt"]
    assert Path(str(tls.key_file)).read_text() == data["tls.key"]
    assert oct(Path(str(tls.key_file)).stat().st_mode & 0o777) == "0o600"
    # Its pods read their client certificate at start: the template carries the issue time, so a renewal rolls them.
    sts = {"kind": "StatefulSet", "metadata": {"name": "broker-a"}, "spec": {"template": {"metadata": {}}}}
    client_certificate_template([sts], objects[0], mutual)
    assert sts["spec"]["template"]["metadata"]["annotations"]["rocketmq-operator.dev/tls-issued-at"] == f"{NOW:.0f}"
    plain = {"kind": "StatefulSet", "metadata": {"name": "broker-a"}, "spec": {"template": {"metadata": {}}}}
    client_certificate_template([plain], objects[0], _bg())
    assert "annotations" not in plain["spec"]["template"]["metadata"]  # without clientAuth nothing rolls


def test_chain_only_verification_still_requires_a_certificate(tmp_path: Path) -> None:
    api = FakeApi()
    objects, _ = _issue(api, _bg(), NOW)
    ca = tmp_path / "ca.crt"
    ca.write_text(secret_data(objects[0])["ca.crt"])
    context = ClientTls(str(ca), check_hostname=False).context()
    assert context.check_hostname is False and context.verify_mode is ssl.CERT_REQUIRED
    assert ClientTls(str(ca)).context().check_hostname is True


def _pod(name: str, started: float, ready: bool = True) -> JSON:
    at = dt.datetime.fromtimestamp(started, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "metadata": {"name": name},
        "status": {
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "containerStatuses": [{"state": {"running": {"startedAt": at}}}],
        },
    }


def test_controllers_restart_one_at_a_time_after_a_renewal_once_the_others_settled() -> None:
    api = FakeApi()
    objects, _ = _issue(api, _cg(), NOW)
    secret = objects[0]
    before = NOW - 3600
    pods = [_pod("ctl-0", before), _pod("ctl-1", before), _pod("ctl-2", before)]
    assert controller_restart(_cg(), secret, pods, NOW + 60) == "ctl-0"
    # ctl-0 back with the new certificate, but not settled yet: nobody else now.
    pods[0] = _pod("ctl-0", NOW + 70)
    assert controller_restart(_cg(), secret, pods, NOW + 75) is None
    assert controller_restart(_cg(), secret, pods, NOW + 100) == "ctl-1"
    # A pod not ready, or missing: never restart another.
    assert controller_restart(_cg(), secret, [pods[0], _pod("ctl-1", before, ready=False), pods[2]], NOW + 100) is None
    assert controller_restart(_cg(), secret, pods[:2], NOW + 100) is None
    # All started after the issue: nothing to do.
    fresh = [_pod(f"ctl-{i}", NOW + 10) for i in range(3)]
    assert controller_restart(_cg(), secret, fresh, NOW + 100) is None
    # The pod just deleted still reads Ready while its container stops: it is not deleted again, nor another.
    old = [_pod(f"ctl-{i}", before) for i in range(3)]
    old[0]["metadata"]["deletionTimestamp"] = "2026-11-27T05:48:32Z"
    assert controller_restart(_cg(), secret, old, NOW + 100) is None


def test_one_resource_passes_one_at_a_time() -> None:
    """kopf runs a resource's change handler and resync timer concurrently: both take that resource's lock (two
    passes that both found no certificate Secret issued two, and the controllers restarted for the second)."""
    import asyncio

    from rocketmq_operator.platforms.kubernetes.handlers import pass_lock

    mine: dict[str, object] = {}
    other: dict[str, object] = {}
    order: list[str] = []

    async def one_pass(name: str) -> None:
        async with pass_lock(mine):  # type: ignore[arg-type]
            order.append(f"{name} begins")
            await asyncio.sleep(0)
            order.append(f"{name} ends")

    async def both() -> None:
        await asyncio.gather(one_pass("change"), one_pass("resync"))

    asyncio.run(both())
    assert order == ["change begins", "change ends", "resync begins", "resync ends"]
    assert pass_lock(mine) is pass_lock(mine)  # type: ignore[arg-type]
    assert pass_lock(other) is not pass_lock(mine)  # type: ignore[arg-type]


class _AuthorityMadeMeanwhile(FakeApi):
    """Another group's pass stores the namespace authority between this pass's read (which found none) and its
    write, as the API server saw when examples/tls.yaml created two groups at once."""

    theirs: str = ""

    async def get(self, kind: str, namespace: str | None, name: str) -> JSON | None:
        if name == AUTHORITY_SECRET and not self.theirs:
            other = FakeApi()
            await authority(other, "ns", NOW)  # type: ignore[arg-type]
            self.put(other.objects[("Secret", "ns", AUTHORITY_SECRET)])
            self.theirs = secret_data(other.objects[("Secret", "ns", AUTHORITY_SECRET)])["ca.crt"]
            return None
        return await super().get(kind, namespace, name)


def test_an_authority_made_meanwhile_by_another_group_is_used_never_overwritten() -> None:
    api = _AuthorityMadeMeanwhile()
    objects, blocked = _issue(api, _bg(), NOW)
    assert blocked is None and objects
    stored = secret_data(api.objects[("Secret", "ns", AUTHORITY_SECRET)])["ca.crt"]
    assert stored == api.theirs  # not replaced by one made here
    assert secret_data(objects[0])["ca.crt"] == stored and signed_by(secret_data(objects[0])["tls.crt"], stored)
    assert ("apply", "Secret", AUTHORITY_SECRET) not in api.log


def test_an_expired_authority_is_replaced_only_at_the_version_read() -> None:
    api = FakeApi()
    asyncio.run(authority(api, "ns", NOW))  # type: ignore[arg-type]
    first = api.objects[("Secret", "ns", AUTHORITY_SECRET)]
    later = NOW + 20 * 365 * DAY  # past the authority's lifetime
    renewed = asyncio.run(authority(api, "ns", later))  # type: ignore[arg-type]
    stored = api.objects[("Secret", "ns", AUTHORITY_SECRET)]
    assert secret_data(stored)["ca.crt"] == renewed.trust != secret_data(first)["ca.crt"]
    stale = copy.deepcopy(stored)
    stale["metadata"]["resourceVersion"] = "0"
    with pytest.raises(KubeError) as refused:
        asyncio.run(api.apply(stale))
    assert refused.value.status == 409


def test_a_deleted_resource_waits_for_its_timers_seconds_not_a_minute() -> None:
    """kopf keeps a deleted resource's finalizer until its timers exited and, for a timer caught mid-pass, looks
    again only after ``cancellation_polling`` (60 s by default): `kubectl delete proxy --timeout=60s` timed out on
    that wait in a CI run under load."""
    import kopf

    from rocketmq_operator.platforms.kubernetes.handlers import configure

    settings = kopf.OperatorSettings()
    assert settings.background.cancellation_polling == 60  # kopf's default, the one that bit
    configure(settings)
    assert settings.background.cancellation_polling <= 2
    assert settings.watching.server_timeout == 300


# The authority's rotation (core.tls.plan_authority executed here): a successor trusted beside it, every leaf served
# with the bridge, the predecessor retired once the overlap is over and no pod trusts only it.


def _ask_rotation(api: FakeApi, token: str, overlap: str) -> None:
    annotations = api.objects[("Secret", "ns", AUTHORITY_SECRET)]["metadata"].setdefault("annotations", {})
    annotations.update({ANNOTATION_ROTATE: token, ANNOTATION_OVERLAP: overlap})


def _authority_state(api: FakeApi) -> str:
    return str(api.objects[("Secret", "ns", AUTHORITY_SECRET)]["metadata"]["annotations"][ANNOTATION_AUTHORITY_STATE])


def _tls_pod(name: str, secret: str, created: float) -> JSON:
    stamp = dt.datetime.fromtimestamp(created, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "creationTimestamp": stamp,
            "labels": {"app.kubernetes.io/managed-by": "rocketmq-operator"},
        },
        "spec": {"volumes": [{"name": "tls", "secret": {"secretName": secret}}]},
    }


def test_a_rotation_trusts_both_authorities_serves_the_bridge_and_retires_the_old_one_after_the_pods() -> None:
    api = FakeApi()
    first, _ = _issue(api, _bg(), NOW)
    _apply(api, first)
    old_ca = secret_data(api.objects[("Secret", "ns", AUTHORITY_SECRET)])["ca.crt"]
    api.put(_tls_pod("broker-a-0", "broker-a-tls", NOW + 60))
    _ask_rotation(api, "t1", "1h")

    rotated, _ = _issue(api, _bg(), NOW + 100)
    data = secret_data(rotated[0])
    trust = pem_certificates(data["ca.crt"])
    assert len(trust) == 2 and trust[1] == old_ca and trust[0] != old_ca  # the successor first: it signs now
    leaf, bridge = pem_certificates(data["tls.crt"])
    assert signed_by(leaf, trust[0]) and signed_by(bridge, old_ca)  # leaf -> bridge -> the old authority
    stored = api.objects[("Secret", "ns", AUTHORITY_SECRET)]
    assert secret_data(stored)[BRIDGE_KEY] == bridge and secret_data(stored)["ca.crt"] == data["ca.crt"]
    assert "both authorities trusted until" in _authority_state(api)
    _apply(api, rotated)
    issued = NOW + 100

    # The overlap runs: nothing changes, and the state is not written again.
    writes = api.writes_of("apply")
    assert _issue(api, _bg(), NOW + 1000) == ([], None)
    assert api.writes_of("apply") == writes
    # Over, but broker-a-0 was created before its Secret held the new trust: kept, and the state names it.
    assert _issue(api, _bg(), issued + 3700) == ([], None)
    assert "1 started before the rotation and trust only the previous authority: broker-a-0" in _authority_state(api)
    # The pod re-created since: the old authority leaves, every leaf is issued again without the bridge.
    api.put(_tls_pod("broker-a-0", "broker-a-tls", issued + 3800))
    retired, _ = _issue(api, _bg(), issued + 3900)
    data = secret_data(retired[0])
    assert pem_certificates(data["ca.crt"]) == [trust[0]] and pem_certificates(data["tls.crt"])[1:] == []
    assert signed_by(data["tls.crt"], trust[0]) and "retire" in _authority_state(api)
    _apply(api, retired)
    assert _issue(api, _bg(), issued + 4000) == ([], None)


def test_a_rotation_asked_for_during_an_overlap_waits_for_it() -> None:
    api = FakeApi()
    _apply(api, _issue(api, _bg(), NOW)[0])
    _ask_rotation(api, "t1", "0s")
    _apply(api, _issue(api, _bg(), NOW + 10)[0])
    successor = pem_certificates(secret_data(api.objects[("Secret", "ns", AUTHORITY_SECRET)])["ca.crt"])[0]
    api.put(_tls_pod("broker-a-0", "broker-a-tls", NOW + 5))  # created before its Secret held the new trust
    _ask_rotation(api, "t2", "0s")
    assert _issue(api, _bg(), NOW + 20) == ([], None)
    state = _authority_state(api)
    assert "broker-a-0" in state and "a rotation asked for now waits until this one is done" in state, state
    api.put(_tls_pod("broker-a-0", "broker-a-tls", NOW + 30))
    _apply(api, _issue(api, _bg(), NOW + 40)[0])  # retired
    again, _ = _issue(api, _bg(), NOW + 50)  # and t2 carried out now
    trust = pem_certificates(secret_data(again[0])["ca.crt"])
    assert len(trust) == 2 and trust[1] == successor


def test_an_authority_in_its_last_year_is_rotated_without_being_asked() -> None:
    api = FakeApi()
    _apply(api, _issue(api, _bg(), NOW)[0])
    later = NOW + 9.5 * 365 * DAY  # the ten-year authority has half a year left; the leaf is due as well
    renewed, _ = _issue(api, _bg(), later)
    assert len(pem_certificates(secret_data(renewed[0])["ca.crt"])) == 2
