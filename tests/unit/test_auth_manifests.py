"""spec.auth around the core: Secrets given with the manifests, the local platform's checks, the rendered keys,
and Kubernetes refusing what it does not run yet. No value of a Secret is ever in a message."""

from __future__ import annotations

import argparse
import base64
import copy
from typing import Any

import pytest

from rocketmq_operator.api.models import BrokerGroup
from rocketmq_operator.api.validation import parse_secret, validate_document
from rocketmq_operator.cli.tools import credentials_from
from rocketmq_operator.control.auth import wanted_users
from rocketmq_operator.platforms.local.auth import AuthSecretError, select_secrets
from rocketmq_operator.render.config import AUTH_KEYS, auth_secret_keys, broker_config
from rocketmq_operator.tools.produce import ToolError

GROUP: dict[str, Any] = {
    "apiVersion": "rocketmq-operator.dev/v1alpha1",
    "kind": "BrokerGroup",
    "metadata": {"name": "broker-a"},
    "spec": {
        "replicas": 3,
        "haMode": "sync",
        "nameServers": ["ns:9876"],
        "auth": {
            "enabled": True,
            "adminSecret": "admin",
            "users": [
                {
                    "name": "app",
                    "passwordSecret": {"name": "app", "key": "pw"},
                    "acls": [{"resource": "Topic:orders", "actions": ["Pub", "Sub"]}],
                }
            ],
        },
    },
}


def _group(**auth: Any) -> BrokerGroup:
    doc = copy.deepcopy(GROUP)
    doc["spec"]["auth"].update(auth)
    return BrokerGroup.model_validate(doc)


def _secret(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "stringData": data}


def test_a_secret_document_is_read_with_data_and_string_data() -> None:
    doc = _secret("app", pw="plain")
    doc["data"] = {"other": base64.b64encode(b"encoded").decode()}
    secret, problems = parse_secret(doc)
    assert not problems and secret is not None
    assert secret.data == {"other": "encoded", "pw": "plain"}
    assert "plain" not in repr(secret)
    assert validate_document(doc).ok


def test_a_bad_secret_is_one_line_without_its_value() -> None:
    doc = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}, "data": {"pw": "%%not-base64%%"}}
    report = validate_document(doc)
    (problem,) = report.errors
    assert problem.path == "data.pw" and "fix:" in problem.message and "%%not-base64%%" not in problem.message


def test_missing_secret_or_key_is_refused_naming_the_field() -> None:
    bg = _group()
    secrets = {s.name: s for s in (parse_secret(_secret("admin", username="root", password="rootpw"))[0],) if s}
    with pytest.raises(AuthSecretError, match=r"spec.auth.users\[0\].passwordSecret: Secret 'app' is not"):
        select_secrets([bg], secrets)
    secrets["app"] = parse_secret(_secret("app", password="x"))[0]  # type: ignore[assignment]
    with pytest.raises(AuthSecretError, match="Secret 'app' has no pw") as err:
        select_secrets([bg], secrets)
    assert "rootpw" not in str(err.value)
    secrets["app"] = parse_secret(_secret("app", pw="apppw"))[0]  # type: ignore[assignment]
    kept = select_secrets([bg], secrets)
    assert kept == {"admin": {"username": "root", "password": "rootpw"}, "app": {"pw": "apppw"}}
    (user,) = wanted_users(bg, kept)
    assert (user.name, user.password, [e.resource for e in user.entries]) == ("app", "apppw", ["Topic:orders"])


def test_auth_renders_the_keys_and_never_the_secret() -> None:
    from rocketmq_operator.render.config import BrokerPlacement, ReplicaPlacement

    placement = BrokerPlacement(name_servers=["ns:9876"], controllers=[], replicas=[ReplicaPlacement(10911, "/s")] * 3)
    conf = broker_config(_group(), 0, placement)
    assert {k: conf[k] for k in AUTH_KEYS} == dict(AUTH_KEYS)
    assert "innerClientAuthenticationCredentials" not in conf
    assert "authenticationEnabled" not in broker_config(_group(enabled=False), 0, placement)
    keys = auth_secret_keys("root", "rootpw")
    assert keys == {"innerClientAuthenticationCredentials": '{"accessKey":"root","secretKey":"rootpw"}'}


def test_the_cli_reads_the_password_from_the_environment_only(monkeypatch: pytest.MonkeyPatch) -> None:
    args = argparse.Namespace(access_key=None, secret_key_env="ROCKETMQ_SECRET_KEY")
    monkeypatch.delenv("ROCKETMQ_ACCESS_KEY", raising=False)
    assert credentials_from(args) is None
    args.access_key = "app"
    monkeypatch.delenv("ROCKETMQ_SECRET_KEY", raising=False)
    with pytest.raises(ToolError, match=r"--access-key app: \$ROCKETMQ_SECRET_KEY is empty; rule: .*; fix: export"):
        credentials_from(args)
    monkeypatch.setenv("ROCKETMQ_SECRET_KEY", "apppw")
    credentials = credentials_from(args)
    assert credentials is not None and (credentials.access_key, credentials.secret_key) == ("app", "apppw")
