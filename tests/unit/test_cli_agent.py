"""`rocketmq-operator agent`: bad input is one `error:` line naming the flag, the value and the fix, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketmq_operator.cli.agent import read_credentials
from rocketmq_operator.cli.main import main


@pytest.mark.parametrize(
    ("flag", "content", "said"),
    [
        ("--credentials-file", None, "cannot be read"),
        ("--credentials-file", "brokerName=a\n", "no innerClientAuthenticationCredentials"),
        ("--tls-ca", None, "no such file"),
    ],
)
def test_bad_files_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, content: str | None, said: str
) -> None:
    path = tmp_path / "file"
    if content is not None:
        path.write_text(content)
    assert main(["agent", flag, str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: {flag} {path}: ") and said in err and "fix:" in err


def test_credentials_are_read_from_the_brokers_auth_properties(tmp_path: Path) -> None:
    path = tmp_path / "auth.properties"
    path.write_text('innerClientAuthenticationCredentials={"accessKey":"admin","secretKey":"s3cret"}\n')
    credentials = read_credentials(path)
    assert (credentials.access_key, credentials.secret_key) == ("admin", "s3cret")


def test_credentials_round_trip_through_the_rendered_secret(tmp_path: Path) -> None:
    from rocketmq_operator.render.config import auth_secret_keys, properties_text

    path = tmp_path / "auth.properties"
    path.write_text(properties_text(auth_secret_keys("admin", "p:a=s s")))
    credentials = read_credentials(path)
    assert (credentials.access_key, credentials.secret_key) == ("admin", "p:a=s s")
