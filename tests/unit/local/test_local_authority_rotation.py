"""The local platform's authority rotation (platforms/local/tls.py, core.tls.plan_authority) on examples/tls.yaml's
processes, in a state directory of real files and fake processes: `local rotate-ca` records the request; the
policy's next run trusts both authorities in the one trust file, issues every certificate again with the bridge
(restarting only the controller, which cannot reload); the predecessor stays while a process started before the
rotation runs, and leaves once none does; a step cut off after its record is finished by the next run."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from rocketmq_operator.api.validation import validate_file
from rocketmq_operator.cli.main import main
from rocketmq_operator.control.certificates import CertificateInfo, pem_certificates, signed_by
from rocketmq_operator.platforms.local.layout import StateLayout
from rocketmq_operator.platforms.local.lifecycle import rotate_ca
from rocketmq_operator.platforms.local.placement import build_state, port_needs
from rocketmq_operator.platforms.local.ports import pack
from rocketmq_operator.platforms.local.state import LocalState, write_state
from rocketmq_operator.platforms.local.tls import TlsPolicy, ensure_certificates, read_rotation, request_rotation

ROOT = Path(__file__).resolve().parents[3]
TLS_EXAMPLE = ROOT / "examples" / "tls.yaml"
NOW = 1_900_000_000.0


def _placed(example: Path, tmp_path: Path) -> tuple[list[Any], StateLayout, LocalState]:
    """The example's resources and the state `local up` would make of them in ``tmp_path`` (nothing started)."""
    resources = [r.resource for r in validate_file(example) if r.resource is not None]
    layout = StateLayout(tmp_path)
    layout.tls_dir.mkdir(parents=True)
    state = build_state(
        resources, pack(port_needs(resources), 23300), layout, files=[str(example)], distribution="/d",
        rocketmq_version="5.5.0",
    )  # fmt: skip
    return resources, layout, state


def _running(tmp_path: Path) -> tuple[StateLayout, LocalState]:
    _, layout, state = _placed(TLS_EXAMPLE, tmp_path)
    ensure_certificates(layout, state)
    for i, replica in enumerate(state.replicas):  # every process running, started an hour before
        replica.pid, replica.started_at = 1000 + i, NOW - 3600
    return layout, state


def _run(layout: StateLayout, state: LocalState, now: float) -> list[str]:
    policy = TlsPolicy(state, layout)
    return [line for line, _ in policy._plan(now, restarts=True)]


def test_a_rotation_keeps_both_trusted_until_no_process_started_before_it_then_retires_the_old_one(
    tmp_path: Path,
) -> None:
    layout, state = _running(tmp_path)
    old = layout.tls_ca.read_text()
    request_rotation(layout, overlap_s=0.0, now=NOW)
    lines = _run(layout, state, NOW)
    trust = pem_certificates(layout.tls_ca.read_text())
    assert len(trust) == 2 and trust[1] == old  # the successor first: it signs from now on
    bridge = layout.tls_bridge.read_text()
    assert signed_by(bridge, old) and CertificateInfo.of(bridge).subject == CertificateInfo.of(trust[0]).subject
    for replica in state.replicas:  # every certificate issued again, with the bridge after it
        chain = pem_certificates(layout.tls_cert(replica.name).read_text())
        assert signed_by(chain[0], trust[0]) and chain[1:] == [bridge], replica.name
    assert all(f"issue {r.name}: signed by another authority" in lines for r in state.replicas), lines
    record = read_rotation(layout)
    assert record["rotated_for"] == record["request"] and record["started_at"] == NOW
    assert "pending" not in record and oct(layout.tls_rotation.stat().st_mode & 0o777) == "0o600"

    # The processes started before the rotation keep the old authority trusted, and are named.
    assert not [line for line in _run(layout, state, NOW + 30) if line.startswith("issue")]
    state_line = read_rotation(layout)["state"]
    assert "started before the rotation and trust only the previous authority" in state_line, state_line
    assert "broker-tls-0" in state_line
    for replica in state.replicas:  # each restarted since (a roll, `local kill`, a renewal's restart)
        replica.started_at = NOW + 40
    lines = _run(layout, state, NOW + 60)
    assert pem_certificates(layout.tls_ca.read_text()) == [trust[0]] and not layout.tls_bridge.exists()
    for replica in state.replicas:
        chain = pem_certificates(layout.tls_cert(replica.name).read_text())
        assert len(chain) == 1 and signed_by(chain[0], trust[0]), replica.name
    assert "retire" in read_rotation(layout)["state"]


def test_a_step_cut_off_after_its_record_is_finished_by_the_next_run(tmp_path: Path) -> None:
    layout, state = _running(tmp_path)
    request_rotation(layout, overlap_s=3600.0, now=NOW)
    _run(layout, state, NOW)
    rotated = layout.tls_ca.read_text()
    record = read_rotation(layout)
    # As if the supervisor died between the record and the files of the retirement: only the record says it.
    record["pending"] = {"trust": pem_certificates(rotated)[0], "key": layout.tls_ca_key.read_text(), "bridge": None}
    layout.tls_rotation.write_text(json.dumps(record))
    _run(layout, state, NOW + 10)
    assert pem_certificates(layout.tls_ca.read_text()) == pem_certificates(rotated)[:1]
    assert not layout.tls_bridge.exists() and "pending" not in read_rotation(layout)


def test_rotate_ca_refuses_a_bad_overlap_and_a_cluster_without_tls_in_one_line(tmp_path: Path, capsys: object) -> None:
    layout, state = _running(tmp_path)
    with pytest.raises(SystemExit) as usage:
        main(["local", "rotate-ca", "--overlap", "soon", "--state-dir", str(tmp_path)])
    assert usage.value.code == 2
    err = capsys.readouterr().err  # type: ignore[attr-defined]
    assert "argument --overlap: 'soon' is not a duration; rule:" in err and "fix: e.g. --overlap 24h" in err
    assert "Traceback" not in err
    write_state(layout.state_file, state)
    printed: list[str] = []
    assert rotate_ca(tmp_path, "1h", out=printed.append) == 0
    assert read_rotation(layout)["overlap_s"] == 3600.0 and "rotation of the TLS authority requested" in printed[0]


MUTUAL_EXAMPLE = ROOT / "examples" / "tls-mutual.yaml"


def test_with_mutual_tls_every_client_presents_the_clusters_certificate_and_a_renewal_restarts_each_process(
    tmp_path: Path,
) -> None:
    from rocketmq_operator.platforms.local.lifecycle import env
    from rocketmq_operator.platforms.local.tls import _reloads, client_tls, tls_groups

    resources, layout, state = _placed(MUTUAL_EXAMPLE, tmp_path)
    issued = ensure_certificates(layout, state)
    assert "issue rocketmq-operator-client: no certificate" in issued, issued
    tls = client_tls(state)
    assert tls is not None and tls.cert_file == str(layout.tls_client_cert)
    assert signed_by(layout.tls_client_cert.read_text(), layout.tls_ca.read_text())
    assert oct(layout.tls_client_key.stat().st_mode & 0o777) == "0o600"
    broker = next(r for r in state.replicas if r.role == "broker")
    assert f"-Dtls.client.certPath={layout.tls_cert(broker.name)}" in broker.argv
    assert "-Dtls.server.need.client.auth=require" in broker.argv
    write_state(layout.state_file, state)
    printed: list[str] = []
    env(tmp_path, out=printed.append)
    assert f"export ROCKETMQ_TLS_CERT={layout.tls_client_cert}" in printed
    assert f"export ROCKETMQ_TLS_KEY={layout.tls_client_key}" in printed
    # A broker reads its client certificate at start: after a renewal it is restarted (one at a time), not only
    # the controller.
    for i, replica in enumerate(state.replicas):  # running since before the renewal (issue times are file times)
        replica.pid, replica.started_at = 1000 + i, time.time() - 3600
    info = CertificateInfo.of(layout.tls_cert(broker.name).read_text())
    policy = TlsPolicy(state, layout)
    later = info.not_after - 3600  # every certificate due
    planned = policy._plan(later, restarts=True)
    assert [line for line, _ in planned if line.startswith("issue")], planned
    policy = TlsPolicy(state, layout)
    restarted = [r for _, r in policy._plan(later + 60, restarts=True) if r is not None]
    assert len(restarted) == 1, restarted  # one at a time
    reloads = {r.name: _reloads(r, tls_groups(resources)) for r in state.replicas}
    assert reloads and not any(reloads.values()), reloads  # brokers too: each is restarted in its turn
