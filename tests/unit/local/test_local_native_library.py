"""RocksDB's JNI library for the local JVMs (platforms/local/distribution.rocksdb_library_dir): taken once out of
the distribution's RocksDB jar onto `java.library.path`, so that no JVM copies 13 MB into /tmp that a SIGKILL
leaves behind; no flag when the jar is missing or the home cannot be written."""

from __future__ import annotations

import zipfile
from pathlib import Path

from rocketmq_operator.platforms.local import distribution as dist


def _home(tmp_path: Path, entries: dict[str, bytes]) -> Path:
    home = tmp_path / "rocketmq"
    (home / "lib").mkdir(parents=True)
    with zipfile.ZipFile(home / "lib" / "rocketmq-rocksdb-1.0.6.jar", "w") as jar:
        for name, data in entries.items():
            jar.writestr(name, data)
    return home


def test_the_linux_libraries_are_extracted_once_and_put_on_the_library_path(tmp_path: Path) -> None:
    home = _home(
        tmp_path,
        {"librocksdbjni-linux64.so": b"so", "librocksdbjni-win64.dll": b"dll", "org/rocksdb/RocksDB.class": b"c"},
    )
    target = dist.rocksdb_library_dir(home)
    assert target == home / dist.NATIVE_DIR
    assert sorted(p.name for p in target.iterdir()) == ["librocksdbjni-linux64.so"]
    (target / "librocksdbjni-linux64.so").write_bytes(b"kept")  # a second call extracts nothing again
    assert dist.rocksdb_library_dir(home) == target
    assert (target / "librocksdbjni-linux64.so").read_bytes() == b"kept"
    argv = dist.java_command("broker", tmp_path / "b.conf", home=home)
    assert f"-Djava.library.path={target}" in argv
    assert argv.index(f"-Djava.library.path={target}") < argv.index("-cp")


def test_no_jar_no_flag(tmp_path: Path) -> None:
    home = tmp_path / "rocketmq"
    (home / "lib").mkdir(parents=True)
    assert dist.rocksdb_library_dir(home) is None
    assert not [a for a in dist.java_command("broker", tmp_path / "b.conf", home=home) if "java.library.path" in a]


def test_a_home_that_cannot_be_written_gets_no_flag(tmp_path: Path) -> None:
    home = _home(tmp_path, {"librocksdbjni-linux64.so": b"so"})
    (home / dist.NATIVE_DIR).write_text("a file where the directory would go", encoding="utf-8")
    assert dist.rocksdb_library_dir(home) is None
