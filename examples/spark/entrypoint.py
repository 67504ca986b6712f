"""The Spark image's entrypoint: the container contract of Spark on Kubernetes, for this image.

`spark-submit --master k8s://... --deploy-mode cluster` (and the Kubeflow spark-operator) start the driver's
container with the arguments ``driver <spark-submit arguments>`` and each executor's with ``executor``, the
executor's settings in environment variables (``SPARK_DRIVER_URL``, ``SPARK_EXECUTOR_ID``, ``SPARK_EXECUTOR_CORES``,
``SPARK_EXECUTOR_MEMORY``, ``SPARK_APPLICATION_ID``, ``SPARK_EXECUTOR_POD_IP``, ``SPARK_EXECUTOR_POD_NAME``,
``SPARK_RESOURCE_PROFILE_ID``, and the JVM options as ``SPARK_JAVA_OPT_0``, ``_1``, ...). Spark's own images do
this in a shell script that pip's pyspark does not ship; this image runs pyspark from pip, so it carries its own.
Any other command runs as given (``python consumer_job.py ...`` in Spark local mode, the Job example).

Python, not a shell script: the JVM options are passed through exactly as Spark set them (spaces included).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

EXECUTOR_BACKEND = "org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend"


def spark_home() -> str:
    import pyspark

    return os.environ.get("SPARK_HOME") or str(Path(pyspark.__file__).parent)


def java_options(env: dict[str, str]) -> list[str]:
    """``SPARK_JAVA_OPT_<n>`` in the order of ``n``."""
    numbered = [(k.removeprefix("SPARK_JAVA_OPT_"), v) for k, v in env.items() if k.startswith("SPARK_JAVA_OPT_")]
    return [v for n, v in sorted(numbered, key=lambda kv: int(kv[0]) if kv[0].isdigit() else 1 << 30)]


def driver_argv(home: str, args: list[str], env: dict[str, str]) -> list[str]:
    # Inside its pod the driver runs in client mode: cluster mode here would submit itself again.
    bind = env.get("SPARK_DRIVER_BIND_ADDRESS", "0.0.0.0")
    return [f"{home}/bin/spark-submit", "--deploy-mode", "client", "--conf", f"spark.driver.bindAddress={bind}", *args]


def executor_argv(home: str, env: dict[str, str]) -> list[str]:
    memory = env["SPARK_EXECUTOR_MEMORY"]
    classpath = ":".join(p for p in (env.get("SPARK_CLASSPATH", ""), f"{home}/jars/*") if p)
    argv = ["java", *java_options(env), f"-Xms{memory}", f"-Xmx{memory}", "-cp", classpath, EXECUTOR_BACKEND]
    argv += ["--driver-url", env["SPARK_DRIVER_URL"], "--executor-id", env["SPARK_EXECUTOR_ID"]]
    argv += ["--cores", env["SPARK_EXECUTOR_CORES"], "--app-id", env["SPARK_APPLICATION_ID"]]
    argv += ["--hostname", env["SPARK_EXECUTOR_POD_IP"]]
    argv += ["--resourceProfileId", env.get("SPARK_RESOURCE_PROFILE_ID", "0")]
    if env.get("SPARK_EXECUTOR_POD_NAME"):
        argv += ["--podName", env["SPARK_EXECUTOR_POD_NAME"]]
    return argv


def main(argv: list[str]) -> None:
    env = dict(os.environ)
    if not argv:
        argv = ["python", "/opt/spark/work-dir/consumer_job.py", "--help"]
    if argv[0] in ("driver", "executor"):
        home = spark_home()
        env.setdefault("SPARK_HOME", home)
        env.setdefault("PYSPARK_PYTHON", sys.executable)
        try:
            command = driver_argv(home, argv[1:], env) if argv[0] == "driver" else executor_argv(home, env)
        except KeyError as exc:
            sys.exit(f"error: Spark's {argv[0]} container needs the environment variable {exc.args[0]} (set by Spark)")
    else:
        command = argv
    os.execvpe(command[0], command, env)


if __name__ == "__main__":
    main(sys.argv[1:])
