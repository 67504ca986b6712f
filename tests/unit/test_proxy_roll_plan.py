"""`core.proxy_roll.plan_proxy_roll`, table-tested: one proxy restarted at a time and only while every other one
serves, the next one only once the restarted one serves on its new revision, a proxy that does not serve first,
the single replica, timeouts that block, and a roll resumed from what status and state keep."""

from __future__ import annotations

import pytest

from rocketmq_operator.core.proxy_roll import (
    ProxyProcess,
    ProxyRollFacts,
    describe_proxy_change,
    plan_proxy_roll,
    proxy_config_keys,
)
from rocketmq_operator.core.roll import StepKind


def p(name: str, rolled: bool, ready: bool = True) -> ProxyProcess:
    return ProxyProcess(name, "new" if rolled else "old", "new", ready)


def facts(
    *procs: ProxyProcess,
    last: str | None = None,
    since: float | None = None,
    now: float = 1000.0,
    serving: float | None = None,
    settle: float = 0.0,
) -> ProxyRollFacts:
    return ProxyRollFacts(
        processes=procs,
        now=now,
        last_restarted=last,
        waiting_since=since,
        timeout_s=300.0,
        serving_since=serving,
        settle_s=settle,
    )


CASES = [
    pytest.param(facts(p("proxy-0", False), p("proxy-1", False)), StepKind.RESTART, "proxy-0", "RollingUpdate",
                 id="both pending and serving: the first one"),
    pytest.param(facts(p("proxy-0", True, ready=False), p("proxy-1", False), last="proxy-0"), StepKind.WAIT, None,
                 "ProxyNotServing", id="restarted one not serving yet blocks the next restart"),
    pytest.param(facts(p("proxy-0", False, ready=True), p("proxy-1", False), last="proxy-0"), StepKind.WAIT, None,
                 "ProxyNotServing", id="restarted one still the old process (SIGTERM not acted on yet): wait"),
    pytest.param(facts(p("proxy-0", True), p("proxy-1", False), last="proxy-0"), StepKind.RESTART, "proxy-1",
                 "RollingUpdate", id="restarted one serves on its new revision: the next"),
    pytest.param(facts(p("proxy-0", True), p("proxy-1", True), last="proxy-1"), StepKind.DONE, None,
                 "RolloutComplete", id="every proxy rolled and the last one serves: done"),
    pytest.param(facts(p("proxy-0", True), p("proxy-1", True, ready=False), last="proxy-1"), StepKind.WAIT, None,
                 "ProxyNotServing", id="last one rolled but not serving yet: not done"),
    pytest.param(facts(p("proxy-0", False), p("proxy-1", False, ready=False)), StepKind.RESTART, "proxy-1",
                 "ProxyNotServing", id="a pending proxy that serves nothing goes first"),
    pytest.param(facts(p("proxy-0", True, ready=False), p("proxy-1", False)), StepKind.WAIT, None,
                 "ProxyNotServing", id="another proxy down (crashed): restarting the only serving one is refused"),
    pytest.param(facts(p("proxy-0", False)), StepKind.RESTART, "proxy-0", "OnlyProxy",
                 id="one replica: its restart is unavoidable and said"),
    pytest.param(facts(p("proxy-0", True, ready=False), p("proxy-1", False), last="proxy-0", since=600.0),
                 StepKind.BLOCKED, None, "ProxyNotServing", id="restarted one never serves: blocked after the timeout"),
    pytest.param(facts(p("proxy-0", True, ready=False), p("proxy-1", False), last="proxy-0", since=800.0),
                 StepKind.WAIT, None, "ProxyNotServing", id="within the timeout: still a wait"),
    pytest.param(facts(p("proxy-0", True, ready=False), p("proxy-1", True)), StepKind.DONE, None,
                 "RolloutComplete", id="nothing pending: a crashed proxy is the back-off's, not the roll's"),
    pytest.param(facts(p("a-0", True), p("a-1", True), p("a-2", False), last="a-1"), StepKind.RESTART, "a-2",
                 "RollingUpdate", id="resumed mid-roll from status: only the one left"),
    # spec.minReadySeconds: the restarted proxy serves that long before the next restart (a Deployment's wait).
    pytest.param(facts(p("proxy-0", True), p("proxy-1", False), last="proxy-0", serving=1000.0, settle=10.0),
                 StepKind.WAIT, None, "ProxySettling", id="restarted one just serves: its clients get minReadySeconds"),
    pytest.param(facts(p("proxy-0", True), p("proxy-1", False), last="proxy-0", serving=991.0, settle=10.0),
                 StepKind.WAIT, None, "ProxySettling", id="9 s of 10: still settling"),
    pytest.param(facts(p("proxy-0", True), p("proxy-1", False), last="proxy-0", serving=990.0, settle=10.0),
                 StepKind.RESTART, "proxy-1", "RollingUpdate", id="served minReadySeconds: the next"),
    pytest.param(facts(p("proxy-0", True), p("proxy-1", False), last="proxy-0", settle=10.0), StepKind.WAIT, None,
                 "ProxySettling", id="serving but not seen serving before (no serving_since): the count starts now"),
    pytest.param(facts(p("proxy-0", True), p("proxy-1", False), last="proxy-0", serving=999.0, settle=10.0,
                       since=100.0),
                 StepKind.WAIT, None, "ProxySettling", id="settling is bounded by minReadySeconds: never blocked"),
    pytest.param(facts(p("proxy-0", True), p("proxy-1", True), last="proxy-1", serving=1000.0, settle=10.0),
                 StepKind.DONE, None, "RolloutComplete", id="the last one serving: done without settling"),
    pytest.param(facts(p("proxy-0", False), p("proxy-1", False), serving=None, settle=10.0), StepKind.RESTART,
                 "proxy-0", "RollingUpdate", id="the first restart of a roll waits for nothing"),
]  # fmt: skip


@pytest.mark.parametrize(("given", "kind", "replica", "reason"), CASES)
def test_plan_proxy_roll(given: ProxyRollFacts, kind: StepKind, replica: str | None, reason: str) -> None:
    step = plan_proxy_roll(given)
    assert (step.kind, step.replica, step.reason) == (kind, replica, reason), step


def test_a_roll_never_has_two_proxies_down() -> None:
    """Run the plan to its end with a proxy that takes two passes to serve after each restart: at no pass is more
    than one proxy not serving, and the proxies are restarted in order, once each."""
    names = ["proxy-0", "proxy-1", "proxy-2"]
    revision = dict.fromkeys(names, "old")
    booting: dict[str, int] = {}
    restarted: list[str] = []
    last: str | None = None
    for now in range(100):
        procs = tuple(ProxyProcess(n, revision[n], "new", booting.get(n, 0) == 0) for n in names)
        assert sum(not x.ready for x in procs) <= 1, procs
        step = plan_proxy_roll(ProxyRollFacts(procs, float(now), last_restarted=last))
        for n in list(booting):
            booting[n] -= 1
            if booting[n] == 0:
                del booting[n]
        if step.kind is StepKind.DONE:
            break
        if step.kind is StepKind.RESTART:
            assert step.replica is not None
            restarted.append(step.replica)
            revision[step.replica] = "new"
            booting[step.replica] = 2
            last = step.replica
    assert restarted == names
    assert step.kind is StepKind.DONE


def test_a_proxy_down_for_long_blocks_the_roll_with_the_fix() -> None:
    step = plan_proxy_roll(facts(p("proxy-0", True, ready=False), p("proxy-1", False), since=600.0))
    assert (step.kind, step.replica) == (StepKind.BLOCKED, None)
    assert step.text == (
        "proxy-0 does not serve; restarting proxy-1 now could leave no proxy serving (waited 400s); fix: see why "
        "proxy-0 is down in its log; one stopped by `local kill --no-restart` starts again with `rocketmq-operator "
        "local start proxy-0`"
    )


def test_blocked_says_the_fix() -> None:
    step = plan_proxy_roll(facts(p("proxy-0", True, ready=False), p("proxy-1", False), last="proxy-0", since=0.0))
    assert step.kind is StepKind.BLOCKED
    assert "proxy-0 was restarted and does not serve on revision new" in step.message
    assert "correct the Proxy and apply it again" in step.fix


def test_proxy_config_keys_flattens_rmq_proxy_json() -> None:
    keys = proxy_config_keys('{"grpcServerPort": 8081, "namesrvAddr": "a:1;b:2", "x": {"y": 1}}')
    assert keys == {"grpcServerPort": "8081", "namesrvAddr": '"a:1;b:2"', "x": '{"y": 1}'}
    assert proxy_config_keys("not json") == {} and proxy_config_keys("[1]") == {}


@pytest.mark.parametrize(
    ("old", "new", "old_argv", "new_argv", "expected"),
    [
        ({"a": "1"}, {"a": "1"}, ["j"], ["j"], "no change"),
        ({"a": "1"}, {"a": "2"}, ["j"], ["j"],
         "rolling restart of 2 proxies, one at a time, each serving again before the next (rmq-proxy.json keys a)"),
        ({"a": "1"}, {"a": "1"}, ["j"], ["j", "-Dx"],
         "rolling restart of 2 proxies, one at a time, each serving again before the next (jvm options)"),
    ],
)  # fmt: skip
def test_describe_proxy_change(
    old: dict[str, str], new: dict[str, str], old_argv: list[str], new_argv: list[str], expected: str
) -> None:
    assert describe_proxy_change("5.5.0", "5.5.0", [old, old], [new, new], old_argv, new_argv) == expected


def test_describe_proxy_change_of_one_replica_and_of_the_version() -> None:
    assert describe_proxy_change("5.4.0", "5.5.0", [{}], [{}], ["a"], ["b"]) == (
        "rolling restart of 1 proxy, its only proxy: no proxy serves until it is back (version 5.4.0 -> 5.5.0)"
    )
