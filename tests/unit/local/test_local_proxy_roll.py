"""A changed Proxy on the local platform: what `local apply` prints, hands the supervisor and refuses, and the
supervisor's roll of the proxies with stand-in processes: one restarted at a time, the next once it serves, the
progress in `local status`, and a roll resumed by a restarted supervisor from the rollout file and state.json."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from test_local_apply import running_from

from rocketmq_operator.cli import main
from rocketmq_operator.platforms.local import report
from rocketmq_operator.platforms.local.layout import StateLayout
from rocketmq_operator.platforms.local.proxy_roll import LocalProxyRoll
from rocketmq_operator.platforms.local.roll import handle_apply, promote_target, rollout_path, target_config
from rocketmq_operator.platforms.local.state import GroupInfo, LocalState, ReplicaProcess, read_state, write_state

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "proxy.yaml"
ROUTE_REFRESH = "  clusterName: DefaultCluster\n  replicas: 2\n"


def _variant(tmp_path: Path, old: str, new: str, source: Path = EXAMPLE, name: str = "new.yaml") -> Path:
    text = source.read_text(encoding="utf-8")
    assert old in text, old
    path = tmp_path / name
    path.write_text(text.replace(old, new), encoding="utf-8")
    return path


def _said(err: str) -> list[str]:
    """What `local apply` says on stderr, without `validate`'s warnings about the manifest (file#doc ...)."""
    return [line for line in err.splitlines() if ".yaml#" not in line]


def _apply(layout: StateLayout, path: Path) -> int:
    return main(["local", "apply", "-f", str(path), "--state-dir", str(layout.root)])


# ---------------------------------------------------------------------------------------------- local apply


def test_a_changed_route_refresh_rolls_both_proxies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    layout, sent = running_from(EXAMPLE, tmp_path, monkeypatch)
    before = read_state(layout.state_file)
    new = _variant(tmp_path, ROUTE_REFRESH, ROUTE_REFRESH + "  routeRefreshSeconds: 5\n")
    assert _apply(layout, new) == 0
    captured = capsys.readouterr()
    assert (
        "proxy: rolling restart of 2 proxies, one at a time, each serving again before the next (rmq-proxy.json "
        "keys topicRouteServiceCacheRefreshSeconds)"
    ) in captured.out.splitlines()
    assert "broker-a: no change" in captured.out.splitlines()
    assert _said(captured.err) == []
    replicas = sent[-1]["replicas"]
    for name in ("proxy-0", "proxy-1"):
        old = before.replica(name)
        assert old is not None and replicas[name]["revision"] != old.revision
        # The running config stays until the roll restarts the proxy; the target waits beside it.
        assert json.loads(layout.config(name).read_text())["topicRouteServiceCacheRefreshSeconds"] == 1
        assert json.loads(target_config(layout, name).read_text())["topicRouteServiceCacheRefreshSeconds"] == 5
    assert all(replicas[r.name]["revision"] == r.revision for r in before.replicas if r.kind != "Proxy")
    # The supervisor's side: both proxies pending, nothing else.
    answer = handle_apply(before, sent[-1])
    assert answer["ok"] and answer["pending"] == ["proxy-0", "proxy-1"]


def test_a_jvm_option_on_the_proxy_rolls_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    layout, sent = running_from(EXAMPLE, tmp_path, monkeypatch)
    new = _variant(tmp_path, ROUTE_REFRESH, ROUTE_REFRESH + "  jvm:\n    extraOptions: [-Dx.y=1]\n")
    assert _apply(layout, new) == 0
    assert "proxy: rolling restart of 2 proxies, one at a time, each serving again before the next (jvm options)" in (
        capsys.readouterr().out.splitlines()
    )
    assert "-Dx.y=1" in sent[-1]["replicas"]["proxy-1"]["argv"]


def test_a_proxy_of_one_replica_is_restarted_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    one = _variant(tmp_path, "  replicas: 2\n  service:", "  replicas: 1\n  service:", name="one.yaml")
    layout, sent = running_from(one, tmp_path, monkeypatch)
    new = _variant(tmp_path, "  clusterName: DefaultCluster\n  replicas: 1\n",
                   "  clusterName: DefaultCluster\n  replicas: 1\n  routeRefreshSeconds: 3\n", source=one)  # fmt: skip
    assert _apply(layout, new) == 0
    captured = capsys.readouterr()
    assert (
        "proxy: rolling restart of 1 proxy, its only proxy: no proxy serves until it is back (rmq-proxy.json keys "
        "topicRouteServiceCacheRefreshSeconds)"
    ) in captured.out.splitlines()
    assert _said(captured.err) == [
        "warning: Proxy/proxy: spec.replicas is 1, so restarting proxy-0 leaves no proxy serving gRPC clients until it "
        "is back (a few seconds); fix for next time: spec.replicas 2 or more, rolled one at a time"
    ]
    assert sent and sent[-1]["op"] == "apply"


def test_scaling_a_proxy_stays_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    layout, sent = running_from(EXAMPLE, tmp_path, monkeypatch)
    assert _apply(layout, _variant(tmp_path, ROUTE_REFRESH, ROUTE_REFRESH.replace("2", "3"))) == 1
    assert _said(capsys.readouterr().err) == [
        "error: replicas ['proxy-2'] would be added or removed outside a controller-mode BrokerGroup: `local apply` "
        "scales controller-mode BrokerGroups only; fix: `local down` and `local up` with the new manifest"
    ]
    assert not sent


def test_a_changed_controller_group_stays_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    layout, sent = running_from(EXAMPLE, tmp_path, monkeypatch)
    new = _variant(tmp_path, "  jvm:\n    heap: 512Mi\n", "  jvm:\n    heap: 512Mi\n    extraOptions: [-Dx=1]\n")
    assert _apply(layout, new) == 1
    assert _said(capsys.readouterr().err) == [
        "error: ControllerGroup rocketmq-ctl: replica rocketmq-ctl-0 would need a restart (version or restart-only "
        "config), and `local apply` rolls only controller-mode BrokerGroups and Proxies; fix: change only hot keys "
        "there, or `local down` and `local up` with the new manifest"
    ]
    assert not sent


# ---------------------------------------------------------------------------------------- the supervisor's roll


@dataclass
class FakeSupervisor:
    """The supervisor as the roll sees it: a SIGTERM takes the proxy down; `start` is the back-off's start (the
    target taken, `promote_target`), `serve` its ports answering."""

    state: LocalState
    layout: StateLayout
    dirty: bool = False
    serving: set[str] = field(default_factory=set)
    terms: list[str] = field(default_factory=list)

    def save(self) -> None:
        write_state(self.layout.state_file, self.state)
        self.dirty = False

    async def restart_process(self, r: ReplicaProcess) -> None:
        self.terms.append(r.name)

    async def proxy_serves(self, r: ReplicaProcess) -> bool:
        return r.name in self.serving

    def exit_and_start(self, name: str) -> None:
        r = self.state.replica(name)
        assert r is not None
        self.serving.discard(name)
        promote_target(r, self.layout)


def _proxies(tmp_path: Path) -> tuple[LocalState, StateLayout]:
    """Two proxies that run revision r1 with r2 pending, as `local apply` leaves them."""
    layout = StateLayout(tmp_path / "state")
    layout.ensure()
    replicas = []
    for i in range(2):
        name = f"proxy-{i}"
        layout.config(name).write_text('{"topicRouteServiceCacheRefreshSeconds": 1}', encoding="utf-8")
        target_config(layout, name).write_text('{"topicRouteServiceCacheRefreshSeconds": 5}', encoding="utf-8")
        replicas.append(
            ReplicaProcess(
                name=name, role="proxy", group="proxy", kind="Proxy", ordinal=i, phase=3,
                address=f"127.0.0.1:{23000 + 10 * i}", ports={"grpc": 23000 + 10 * i, "remoting": 23001 + 10 * i},
                argv=["java", "old"], config=str(layout.config(name)), run_config=str(layout.run_config(name)),
                data_dir=str(layout.data(name)), log=str(layout.log(name)), pid=100 + i, revision="r1",
                target_revision="r2", target_argv=["java", "new"],
            )
        )  # fmt: skip
    state = LocalState(
        state_dir=str(layout.root), manifest_digest="d", files=[], resources=[], rocketmq_version="5.5.0",
        distribution="/dist", groups=[GroupInfo("proxy", "Proxy", ["proxy-0", "proxy-1"])], replicas=replicas,
    )  # fmt: skip
    write_state(layout.state_file, state)
    return state, layout


def _rollout(layout: StateLayout) -> dict[str, Any]:
    return dict(json.loads(rollout_path(layout, "proxy").read_text(encoding="utf-8")))


async def test_the_supervisor_rolls_one_proxy_at_a_time_and_resumes_after_a_restart(tmp_path: Path) -> None:
    state, layout = _proxies(tmp_path)
    sup = FakeSupervisor(state, layout, serving={"proxy-0", "proxy-1"})
    roll = LocalProxyRoll(sup)

    lines = await roll.run(now=10.0)
    assert sup.terms == ["proxy-0"]
    assert lines == [
        "proxy: rollout Rolling: restart proxy-0: proxy-0 onto revision r2; 1 other proxies serve meanwhile "
        "(SIGTERM to proxy-0; it starts on revision r2)"
    ]
    assert state.replicas[0].roll_requested and read_state(layout.state_file).replicas[0].roll_requested
    assert _rollout(layout)["lastRestarted"] == "proxy-0"

    # The old process has not exited yet, then the new one boots: the next proxy waits either way.
    assert await roll.run(now=11.0) == [
        "proxy: rollout Waiting: proxy-0 was restarted and is not on revision r2 yet (its gRPC and remoting ports "
        "must accept connections); the next proxy waits for it"
    ]
    sup.exit_and_start("proxy-0")
    assert state.replica("proxy-0").revision == "r2"  # type: ignore[union-attr]
    assert json.loads(layout.config("proxy-0").read_text())["topicRouteServiceCacheRefreshSeconds"] == 5
    await roll.run(now=12.0)
    assert sup.terms == ["proxy-0"] and _rollout(layout)["phase"] == "Waiting"

    # proxy-0 serves on r2: proxy-1 next.
    sup.serving.add("proxy-0")
    await roll.run(now=13.0)
    assert sup.terms == ["proxy-0", "proxy-1"]
    assert _rollout(layout)["replicasDone"] == ["proxy-0"] and _rollout(layout)["restarts"] == 2

    # The supervisor is killed here and started again: a new roll reads the rollout file and state.json, and
    # waits for proxy-1 (restarted, not back yet) instead of restarting anything.
    sup.save()
    again = FakeSupervisor(read_state(layout.state_file), layout, serving={"proxy-0", "proxy-1"})
    resumed = LocalProxyRoll(again)
    await resumed.run(now=14.0)
    assert again.terms == [] and _rollout(layout)["phase"] == "Waiting"
    assert again.state.replica("proxy-1").roll_requested  # type: ignore[union-attr]
    again.exit_and_start("proxy-1")
    again.serving.add("proxy-1")
    assert await resumed.run(now=15.0) == ["proxy: rollout Complete: every proxy runs its desired revision"]
    done = _rollout(layout)
    assert (done["phase"], done["replicasDone"], done["restarts"], done["lastRestarted"]) == (
        "Complete", ["proxy-0", "proxy-1"], 2, None
    )  # fmt: skip
    assert await resumed.run(now=16.0) == [] and again.terms == []

    # `local status`: the Proxy's rollout beside its processes, as a BrokerGroup's.
    docs = report.proxy_group_docs(
        again.state,
        layout,
        [{"name": n, "proxy": "proxy", "ready": True, "revision": "r2"} for n in ("proxy-0", "proxy-1")],
    )
    assert docs[0]["name"] == "proxy" and docs[0]["rollout"]["phase"] == "Complete"
    assert report.rollout_lines(docs) == [
        "proxy: rollout Complete (RolloutComplete): every proxy runs its desired revision; 2 restart(s), "
        "0 switchover(s)"
    ]


async def test_a_proxy_that_does_not_serve_blocks_the_roll_with_the_fix(tmp_path: Path) -> None:
    state, layout = _proxies(tmp_path)
    sup = FakeSupervisor(state, layout, serving={"proxy-0", "proxy-1"})
    roll = LocalProxyRoll(sup)
    await roll.run(now=0.0)
    sup.exit_and_start("proxy-0")  # and never serves (a bad option, say)
    await roll.run(now=1.0)
    await roll.run(now=400.0)
    rollout = _rollout(layout)
    assert rollout["phase"] == "Blocked" and rollout["reason"] == "ProxyNotServing", rollout
    assert "fix: see proxy-0's log" in rollout["message"]
    assert sup.terms == ["proxy-0"]  # proxy-1 kept serving
    doc: dict[str, Any] = {"name": "proxy"}
    report.with_rollout(doc, layout, "proxy")
    assert [c["type"] for c in doc["conditions"]] == ["RolloutBlocked"]
    table = report.rollout_lines([{**doc, "replicas": [{"name": "proxy-0"}, {"name": "proxy-1"}]}])
    assert table[0].startswith("proxy: rollout Blocked (ProxyNotServing): proxy-0 was restarted")
    assert table[1].split() == ["GROUP", "REPLICA", "VERSION", "ROLLED"]
    assert table[2].split() == ["proxy", "proxy-0", "-", "yes"] and table[3].split() == [
        "proxy",
        "proxy-1",
        "-",
        "no",
    ]


async def test_nothing_pending_notes_the_revision_and_restarts_nothing(tmp_path: Path) -> None:
    state, layout = _proxies(tmp_path)
    for r in state.replicas:
        r.revision, r.target_argv = r.target_revision, None
    sup = FakeSupervisor(state, layout)
    assert await LocalProxyRoll(sup).run(now=0.0) == []
    assert _rollout(layout)["phase"] == "Complete" and not _rollout(layout)["started"] and sup.terms == []


async def test_the_next_proxy_waits_min_ready_seconds_from_when_the_restarted_one_serves(tmp_path: Path) -> None:
    """spec.minReadySeconds counted from the pass that first sees the restarted proxy serve on its new revision
    (kept in the rollout as `servingSince`, so a restarted supervisor counts on from it), as a Deployment does."""
    state, layout = _proxies(tmp_path)
    state.resources = [
        {"apiVersion": "rocketmq-operator.dev/v1alpha1", "kind": "Proxy", "metadata": {"name": "proxy"},
         "spec": {"nameServers": ["127.0.0.1:9876"], "minReadySeconds": 10}}
    ]  # fmt: skip
    sup = FakeSupervisor(state, layout, serving={"proxy-0", "proxy-1"})
    roll = LocalProxyRoll(sup)
    await roll.run(now=0.0)
    sup.exit_and_start("proxy-0")
    await roll.run(now=5.0)  # not serving yet
    assert _rollout(layout)["servingSince"] is None
    sup.serving.add("proxy-0")
    assert await roll.run(now=20.0) == [
        "proxy: rollout Waiting: proxy-0 serves on revision r2 for 0s of spec.minReadySeconds 10s (time for its "
        "clients to reconnect to it); the next proxy waits"
    ]
    assert _rollout(layout)["servingSince"] == 20.0 and sup.terms == ["proxy-0"]
    resumed = LocalProxyRoll(sup)  # a restarted supervisor counts from the kept servingSince
    await resumed.run(now=29.0)
    assert sup.terms == ["proxy-0"] and _rollout(layout)["reason"] == "ProxySettling"
    await resumed.run(now=30.0)
    assert sup.terms == ["proxy-0", "proxy-1"]
    assert _rollout(layout)["servingSince"] is None  # proxy-1's count starts when it serves
