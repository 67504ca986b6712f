"""RocketMQ's own Java client with its defaults, in a pod: what a default Java application sees during a fault.

`java/JavaDefaultProduce.java` is compiled on the host (the JDK `make test` needs anyway) against the pinned
distribution's jars, shipped to the cluster as a ConfigMap, and run in a pod of the broker image, whose `lib/`
holds the same client. It sends to its own topic (a declared Topic, `TOPIC`): its bodies are not the project
producer's, whose consumers check them.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from real_parts import missing

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "java" / "JavaDefaultProduce.java"
CLASS = "JavaDefaultProduce"
TOPIC = "java-default"
CONFIG_MAP = "java-default-produce"


def compile_producer(out: Path) -> Path:
    """The compiled class file, built into ``out`` against the distribution's lib/."""
    from rocketmq_operator.platforms.local import distribution

    javac = shutil.which("javac")
    if javac is None:
        missing("no javac on PATH (JDK 17 needed)")
    lib = distribution.ensure_distribution() / "lib"
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [str(javac), "--release", "17", "-cp", f"{lib}/*", "-d", str(out), str(SOURCE)],
        check=True,
        capture_output=True,
        text=True,
    )
    return out / f"{CLASS}.class"


def declare_topic(group: Any) -> None:
    """The Java producer's topic, declared as a user would (brokers create no topic on a send)."""
    topic = {
        "apiVersion": "rocketmq-operator.dev/v1alpha1",
        "kind": "Topic",
        "metadata": {"name": TOPIC, "namespace": group.ns},
        "spec": {"brokerGroups": [group.name], "readQueueNums": 4, "writeQueueNums": 4},
    }
    group.node.kubectl("apply", "-f", "-", input=json.dumps(topic))


def start_producer(
    group: Any, pod: str, class_file: Path, *, count: int, rate: float, node_name: str | None = None
) -> None:
    """Start ``JavaDefaultProduce`` in a pod of the broker image: ``count`` keyed messages (key ``<pod>-<seq>``) at
    ``rate`` per second to :data:`TOPIC`, through the group's name servers."""
    node = group.node
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": CONFIG_MAP, "namespace": group.ns},
        "binaryData": {class_file.name: base64.b64encode(class_file.read_bytes()).decode("ascii")},
    }
    node.kubectl("apply", "-f", "-", input=json.dumps(config_map))
    image = "ghcr.io/rocketmq-operator/rocketmq-broker:5.5.0"
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "volumes": [{"name": "java", "configMap": {"name": CONFIG_MAP}}],
        "containers": [
            {
                "name": pod,
                "image": image,
                "imagePullPolicy": "Never",
                "command": [
                    "java",
                    "-Xmx128m",
                    "-Duser.home=/tmp",
                    "-Drocketmq.client.logRoot=/tmp",
                    "-cp",
                    "/opt/rocketmq/lib/*:/java",
                    CLASS,
                    group.name_servers(),
                    TOPIC,
                    f"{pod}-",
                    str(count),
                    str(rate),
                ],
                "volumeMounts": [{"name": "java", "mountPath": "/java", "readOnly": True}],
            }
        ],
    }
    if node_name:
        spec["nodeName"] = node_name
    manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod, "namespace": group.ns}, "spec": spec}
    node.kubectl("apply", "-f", "-", input=json.dumps(manifest))


def result(group: Any, pod: str, timeout: float = 900) -> dict[str, Any]:
    """The producer's JSON report (the last line of its log) once its pod finished."""
    out = group.node.pod_output(group.ns, pod, timeout=timeout)
    line = next((x for x in reversed(out.splitlines()) if x.startswith("{")), None)
    assert line is not None, f"{pod} printed no report:\n{out[-3000:]}"
    return dict(json.loads(line))
