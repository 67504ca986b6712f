"""examples/spark/consumer_job.py: the options it gives the source, credentials and TLS from the tools'
environment variables, and its refusals (plain data: no Spark)."""

from __future__ import annotations

from types import ModuleType

import pytest
from spark_helpers import load_example

from rocketmq_operator.spark.options import parse_options

BASE = ["--topic", "orders", "--output", "/data/o", "--checkpoint", "/data/c", "--name-servers", "ns:9876"]


def _job() -> ModuleType:
    return load_example("consumer_job")


@pytest.fixture(autouse=True)
def _no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ROCKETMQ_ACCESS_KEY", "ROCKETMQ_SECRET_KEY", "ROCKETMQ_TLS_CA", "ROCKETMQ_NAME_SERVERS"):
        monkeypatch.delenv(name, raising=False)


def test_plain_group_gets_no_credentials_and_no_tls() -> None:
    job = _job()
    options = job.source_options(job.parse_args(BASE))
    assert not {"accessKey", "secretKey", "tlsCaFile", "tlsCheckHostname"} & set(options)
    parsed = parse_options(options, streaming=True)
    assert parsed.topics == ("orders",) and parsed.access_key is None and not parsed.tls


def test_credentials_and_authority_come_from_the_tools_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROCKETMQ_ACCESS_KEY", "orders-app")
    monkeypatch.setenv("ROCKETMQ_SECRET_KEY", "s3cret")
    monkeypatch.setenv("ROCKETMQ_TLS_CA", "/etc/rocketmq-tls/ca.crt")
    job = _job()
    parsed = parse_options(job.source_options(job.parse_args([*BASE, "--tls-chain-only"])), streaming=True)
    assert (parsed.access_key, parsed.secret_key) == ("orders-app", "s3cret")
    assert parsed.tls and parsed.tls_ca_file == "/etc/rocketmq-tls/ca.crt" and not parsed.tls_check_hostname


@pytest.mark.parametrize(
    ("env", "extra", "message"),
    [
        ({"ROCKETMQ_ACCESS_KEY": "orders-app"}, [], "--access-key and $ROCKETMQ_SECRET_KEY go together"),
        ({"ROCKETMQ_SECRET_KEY": "s3cret"}, [], "--access-key and $ROCKETMQ_SECRET_KEY go together"),
        ({}, ["--tls-chain-only"], "--tls-chain-only needs --tls-ca"),
    ],
)
def test_refusals_are_one_line_usage_errors(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    env: dict[str, str],
    extra: list[str],
    message: str,
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    job = _job()
    with pytest.raises(SystemExit) as exited:
        job.parse_args([*BASE, *extra])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and "s3cret" not in err
