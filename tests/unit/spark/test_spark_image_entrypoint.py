"""examples/spark/entrypoint.py: the Spark image's half of Spark on Kubernetes' container contract (plain data: no
JVM is started; the real run is tests/e2e/test_spark_job.py in cluster mode)."""

from __future__ import annotations

from types import ModuleType

import pytest
from spark_helpers import load_example

EXECUTOR_ENV = {
    "SPARK_DRIVER_URL": "spark://CoarseGrainedScheduler@orders-spark-driver-svc.rocketmq.svc:7078",
    "SPARK_EXECUTOR_ID": "2",
    "SPARK_EXECUTOR_CORES": "1",
    "SPARK_EXECUTOR_MEMORY": "512m",
    "SPARK_APPLICATION_ID": "spark-0123",
    "SPARK_EXECUTOR_POD_IP": "10.213.2.9",
    "SPARK_EXECUTOR_POD_NAME": "orders-spark-exec-2",
    "SPARK_RESOURCE_PROFILE_ID": "0",
    "SPARK_JAVA_OPT_10": "-Dlast=1",
    "SPARK_JAVA_OPT_0": "-Dspark.driver.port=7078",
    "SPARK_JAVA_OPT_1": "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "SPARK_JAVA_OPT_2": "-Dwith.space=a b",
}


def _entrypoint() -> ModuleType:
    return load_example("entrypoint")


def test_the_driver_runs_spark_submit_in_client_mode_with_sparks_own_arguments() -> None:
    argv = _entrypoint().driver_argv("/spark", ["--properties-file", "/opt/spark/conf/spark.properties", "app.py"], {})
    assert argv == [
        "/spark/bin/spark-submit", "--deploy-mode", "client", "--conf", "spark.driver.bindAddress=0.0.0.0",
        "--properties-file", "/opt/spark/conf/spark.properties", "app.py",
    ]  # fmt: skip
    bound = _entrypoint().driver_argv("/spark", [], {"SPARK_DRIVER_BIND_ADDRESS": "10.213.1.7"})
    assert "spark.driver.bindAddress=10.213.1.7" in bound


def test_an_executor_is_the_kubernetes_backend_with_its_options_in_order_and_intact() -> None:
    argv = _entrypoint().executor_argv("/spark", EXECUTOR_ENV)
    backend = argv.index("org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend")
    assert argv[:5] == [
        "java", "-Dspark.driver.port=7078", "--add-opens=java.base/java.lang=ALL-UNNAMED", "-Dwith.space=a b",
        "-Dlast=1",
    ]  # fmt: skip
    assert argv[5:backend] == ["-Xms512m", "-Xmx512m", "-cp", "/spark/jars/*"]
    flags = dict(zip(argv[backend + 1 :: 2], argv[backend + 2 :: 2], strict=True))
    assert flags == {
        "--driver-url": EXECUTOR_ENV["SPARK_DRIVER_URL"],
        "--executor-id": "2",
        "--cores": "1",
        "--app-id": "spark-0123",
        "--hostname": "10.213.2.9",
        "--resourceProfileId": "0",
        "--podName": "orders-spark-exec-2",
    }


def test_an_executor_without_sparks_environment_is_refused_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in EXECUTOR_ENV:
        monkeypatch.delenv(name, raising=False)
    module = _entrypoint()
    monkeypatch.setattr(module, "spark_home", lambda: "/spark")
    with pytest.raises(SystemExit, match="needs the environment variable SPARK_EXECUTOR_MEMORY"):
        module.main(["executor"])
