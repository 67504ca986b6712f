"""The Java gRPC client's version is pinned in one place for Maven (rocketmq/clients/pom.xml) and one for the
tests that run it (tests/java_grpc.py): the two agree."""

from __future__ import annotations

import re

import java_grpc


def test_the_clients_pom_and_the_tests_pin_the_same_java_grpc_client() -> None:
    pom = java_grpc.POM.read_text()
    pinned = re.search(r"<client\.version>([^<]+)</client\.version>", pom)
    assert pinned is not None, "rocketmq/clients/pom.xml pins no client.version"
    assert pinned.group(1) == java_grpc.JAVA_GRPC_CLIENT_VERSION
    assert "<artifactId>rocketmq-client-java</artifactId>" in pom
