"""A fleet rolled out by deploy.yml: two replicas behind sglang-router 0.3.2, one canary batch, then the rest.

The converged fleet serves behind a ready router; a passing configuration reaches both replicas one batch at a
time while a client sends requests through the router, and not one fails; a second replica whose candidate is worse
is rolled back there while the canary stays promoted; a canary that falls back to plain decoding during its bake is
rolled back and the rollout stops; a canary whose drain times out is never restarted and goes back behind the
router; an unreachable replica stops the rollout. Each rollout leaves its fleet report (markdown + JSON) on the
controller.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import ansible_runner
import httpx
import pytest
import testinfra

SCENARIO = Path(os.environ.get("MOLECULE_SCENARIO_DIRECTORY", Path(__file__).resolve().parents[1]))
PROJECT = SCENARIO.parents[1]
sys.path.insert(0, str(PROJECT / "scripts"))
import bench_fleet_rollout as fleet_bench  # noqa: E402 - the benchmark's client, found through the path above

EPHEMERAL = Path(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", "/nonexistent"))
BASE = "/opt/specgate"
REPLICAS = {"specgate-fleet-a": 36000, "specgate-fleet-b": 36001}
ROUTER = "http://127.0.0.1:36050"
# deploy.yml's monitor (host_vars/specgate-fleet-lb.yml).
PROMETHEUS = "http://127.0.0.1:36060"
KEY = "sk-specgate-demo"
# The demo's engine environment (inventory/demo); a rollout adds a knob, which makes a new release id.
SIM_ENV = {"SPECGATE_SIM_LOAD_SECONDS": "2", "SPECGATE_SIM_TIME_SCALE": "0.2"}


def host(name: str):
    return testinfra.get_host(f"podman://{name}")


def pointer(name: str, which: str) -> str:
    return Path(host(name).file(f"{BASE}/{which}").linked_to).name


def releases() -> dict[str, tuple[str, str]]:
    return {name: (pointer(name, "active"), pointer(name, "known-good")) for name in REPLICAS}


def router_workers() -> dict[str, bool]:
    answer = httpx.get(f"{ROUTER}/workers", timeout=10).json()
    return {w["url"]: bool(w.get("is_healthy")) for w in answer.get("workers", [])}


def wait_router_healthy(deadline_s: float = 90) -> dict[str, bool]:
    deadline = time.monotonic() + deadline_s
    workers: dict[str, bool] = {}
    while time.monotonic() < deadline:
        workers = router_workers()
        if len(workers) == len(REPLICAS) and all(workers.values()):
            return workers
        time.sleep(1)
    return workers


def rollout(tmp_path: Path, extravars: dict, event_handler=None) -> ansible_runner.Runner:
    (tmp_path / "private").mkdir()
    return ansible_runner.run(
        event_handler=event_handler,
        private_data_dir=str(tmp_path / "private"),
        project_dir=str(PROJECT),
        playbook=str(PROJECT / "deploy.yml"),
        inventory=os.environ["MOLECULE_INVENTORY_FILE"],
        # Each rollout's report in the test's own directory: nothing else's report can be taken for it. The gate
        # each replica runs is host_vars' (the acceptance length alone: the fleet's proofs are about batches, the
        # router, the drain and the bake; the gate's own are molecule/gate's).
        extravars={"demo_host_manage_container": False, "fleet_rollout_reports_dir": str(tmp_path / "reports"),
                   **extravars},
        quiet=True,
        envvars={"ANSIBLE_CONFIG": str(PROJECT / "ansible.cfg"), "ANSIBLE_FACT_CACHING": "memory"},
    )


def the_report(tmp_path: Path) -> dict:
    (path,) = (tmp_path / "reports").glob("*/fleet.json")  # one rollout, one report
    return json.loads(path.read_text())


def failure_messages(run: ansible_runner.Runner) -> list[str]:
    return [
        str(e["event_data"].get("res", {}).get("msg", ""))
        for e in run.events
        if e.get("event") == "runner_on_failed"
    ]


def hosts_that_ran(run: ansible_runner.Runner, task_prefix: str) -> list[str]:
    """The hosts, in order, on which a task whose name starts with task_prefix ran (ok or changed)."""
    return [
        e["event_data"]["host"]
        for e in run.events
        if e.get("event") == "runner_on_ok" and e["event_data"].get("task", "").startswith(task_prefix)
    ]


def router_client() -> fleet_bench.Traffic:
    """Requests through the router as scripts/bench_fleet_rollout.py sends them, of two kinds at once: long ones (8 at
    a time, 3500 tokens, a few seconds each on the sim, within the fixture model's 4096 positions), so several run on
    a replica when it leaves and its drain waits on them; and short ones (2 at a time, 16 tokens), so many finish in
    every bake window (the bake's evidence). Capped to outlast a rollout."""
    return fleet_bench.Traffic(fleet_bench.Client(ROUTER, KEY, 50000, 900, concurrency=8, max_new_tokens=3500),
                               fleet_bench.Client(ROUTER, KEY, 50000, 900, concurrency=2, max_new_tokens=16))


def test_converged_fleet_serves_behind_a_ready_router() -> None:
    for name, (active, known_good) in releases().items():
        assert active, name
        assert active == known_good, name
    assert httpx.get(f"{ROUTER}/readiness", timeout=10).status_code == 200
    workers = wait_router_healthy()
    assert workers == {f"http://127.0.0.1:{port}": True for port in REPLICAS.values()}
    unit = host("specgate-fleet-lb").service("sglang-router")
    assert unit.is_running
    assert unit.is_enabled
    props = host("specgate-fleet-lb").run(
        "systemctl show sglang-router -p User -p NoNewPrivileges -p ProtectSystem -p PrivateTmp"
    ).stdout
    assert "User=sglang-router" in props
    assert "NoNewPrivileges=yes" in props
    assert "ProtectSystem=strict" in props


def prometheus(path: str, **params: str) -> dict:
    answer = httpx.get(f"{PROMETHEUS}{path}", params=params, timeout=10)
    answer.raise_for_status()
    return answer.json()["data"]


def test_prometheus_on_the_routers_host_scrapes_the_fleet_knows_what_each_replica_serves_and_fires_nothing() -> None:
    """deploy.yml's monitor play (no sglang_monitors group: the router's host): the distribution's Prometheus,
    scraping each replica's engine, the router and each replica's node exporter, with specgate's rules loaded."""
    deadline = time.monotonic() + 60
    targets: list[dict] = []
    while time.monotonic() < deadline:
        targets = prometheus("/api/v1/targets", state="active")["activeTargets"]
        if targets and all(target["health"] == "up" for target in targets):
            break
        time.sleep(1)
    assert sorted((t["labels"]["job"], t["labels"]["host"], t["health"]) for t in targets) == [
        ("node", "specgate-fleet-a", "up"), ("node", "specgate-fleet-b", "up"),
        ("sglang", "specgate-fleet-a", "up"), ("sglang", "specgate-fleet-b", "up"),
        ("sglang-router", "specgate-fleet-lb", "up")], targets
    # What each replica serves, through its node exporter's textfile collector, joined on the host label.
    served = {sample["metric"]["host"]: (sample["metric"]["release"], sample["metric"]["known_good"])
              for sample in prometheus("/api/v1/query", query="specgate_release_info")["result"]}
    assert served == {name: (active, "true") for name, (active, _) in releases().items()}
    rules = [rule for group in prometheus("/api/v1/rules")["groups"] for rule in group["rules"]]
    assert {rule["name"] for rule in rules} >= {"specgate:live_accept_length", "SpecgateSpeculationFallback",
                                                "SpecgateAcceptanceDrift", "SpecgateUnprovedRelease",
                                                "SpecgateRequestErrors", "SpecgateEngineDown"}
    assert all(rule["health"] == "ok" for rule in rules), rules
    # A fleet that serves what its gates proved: no alert pending, none firing.
    assert prometheus("/api/v1/alerts")["alerts"] == []
    props = host("specgate-fleet-lb").run("systemctl show prometheus -p User -p ProtectSystem -p ExecStart").stdout
    assert "User=prometheus" in props
    assert "ProtectSystem=strict" in props
    assert "--storage.tsdb.retention.time=15d" in props


class AlertWatch:
    """Prometheus's /api/v1/alerts read every second while a rollout runs: each (alert, host, state) seen."""

    def __init__(self) -> None:
        self.seen: set[tuple[str, str, str]] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                alerts = prometheus("/api/v1/alerts")["alerts"]
            except httpx.HTTPError:
                alerts = []
            self.seen |= {(a["labels"]["alertname"], a["labels"].get("host", ""), a["state"]) for a in alerts}
            self._stop.wait(1)

    def __enter__(self) -> AlertWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=15)

    def fired(self) -> set[tuple[str, str]]:
        return {(name, host) for name, host, state in self.seen if state == "firing"}


def wait_no_alerts(deadline_s: float = 60) -> list[dict]:
    """Prometheus's alerts once none is pending or firing, or those still there after deadline_s."""
    deadline = time.monotonic() + deadline_s
    alerts = prometheus("/api/v1/alerts")["alerts"]
    while alerts and time.monotonic() < deadline:
        time.sleep(1)
        alerts = prometheus("/api/v1/alerts")["alerts"]
    return alerts


def dashboard_queries() -> list[str]:
    """Every PromQL of the shipped dashboard (dashboards/specgate-fleet.json): its panels' and its annotations'."""
    board = json.loads((PROJECT / "dashboards" / "specgate-fleet.json").read_text())
    exprs = [target["expr"] for panel in board["panels"] for target in panel["targets"]]
    return exprs + [annotation["expr"] for annotation in board["annotations"]["list"]]


def test_every_dashboard_query_answers_with_data_from_the_fleet() -> None:
    """Each panel's and annotation's query, as Grafana would send it (its rate interval 1m at a 2 s scrape), over
    the hour since the fleet converged, returns at least one finite sample: no panel of the dashboard stays empty
    on a fleet specgate deployed. Requests through the router first, so the latency histograms have fresh rates."""
    with router_client() as client:
        time.sleep(12)
    assert client.ok > 0, client.failed[:3]
    time.sleep(4)  # two more scrapes after the last request
    end = time.time()
    queries = dashboard_queries()
    assert len(queries) >= 12, queries
    empty = []
    for expr in queries:
        result = prometheus("/api/v1/query_range", query=expr.replace("$__rate_interval", "1m"),
                            start=str(end - 3600), end=str(end), step="10")["result"]
        values = [float(value) for series in result for _, value in series["values"]]
        if not any(math.isfinite(value) for value in values):
            empty.append(expr)
    assert empty == [], empty


EXPORTER_DROPIN = "/etc/systemd/system/prometheus-node-exporter.service.d/specgate.conf"


def test_a_passing_configuration_reaches_the_fleet_one_batch_at_a_time_without_a_failed_request(tmp_path) -> None:
    known = releases()
    # A hand edit of the second replica's node exporter drop-in: its one-call check sees it, and the setup repairs it.
    assert host("specgate-fleet-b").run(f"chmod 0600 {EXPORTER_DROPIN}").rc == 0
    with router_client() as client, AlertWatch() as alerts:
        # A bake too: each replica becomes known-good only after the client's live traffic proved it.
        run = rollout(tmp_path, {"sglang_service_extra_env": {**SIM_ENV, "SPECGATE_SIM_SEED": "11"},
                                 "fleet_rollout_bake_seconds": 9, "fleet_rollout_bake_interval": 3})
        # Requests keep flowing after the last replica is back: a few more answered (not a fixed sleep).
        client.answered_more(5)
    assert run.status == "successful", failure_messages(run)
    assert client.failed == [], client.failed[:5]
    assert client.ok > 20
    now = releases()
    for name in REPLICAS:
        assert now[name][0] != known[name][0], name  # switched
        assert now[name][0] == now[name][1], name  # and promoted
    # The canary left the router, was gated and came back before the second replica left.
    left = hosts_that_ran(run, "Take the worker out of the router")
    back = hosts_that_ran(run, "Put the worker back behind the router")
    assert left == ["specgate-fleet-a", "specgate-fleet-b"]
    assert back == left
    order = [
        (e["event_data"]["host"], e["event_data"].get("task", ""))
        for e in run.events
        if e.get("event") == "runner_on_ok"
    ]
    canary_back = next(i for i, (h, t) in enumerate(order) if (h, t[:14]) == ("specgate-fleet-a", "Put the worker"))
    second_out = next(i for i, (h, t) in enumerate(order) if (h, t[:15]) == ("specgate-fleet-b", "Take the worker"))
    assert canary_back < second_out
    report = the_report(tmp_path)
    assert [(row["host"], row["batch"], row["outcome"]) for row in report["replicas"]] == [
        ("specgate-fleet-a", 1, "promoted"), ("specgate-fleet-b", 2, "promoted"),
    ]
    assert report["replicas"][0]["previous_release"] == known["specgate-fleet-a"][0]
    assert report["replicas"][0]["router"]["drained_s"] is not None
    # Each replica left with requests running on it (not one short request at a time), and the drain waited on the
    # long ones still running once the router let it go; the client above still saw none fail.
    routers = {row["host"]: row["router"] for row in report["replicas"]}
    assert min(int(r["in_flight_at_leave"]) for r in routers.values()) >= 1, routers
    assert max(int(r["drain_waited_on"]) for r in routers.values()) >= 1, routers
    (markdown,) = (tmp_path / "reports").glob("*/fleet.md")
    assert "in flight, drained in" in markdown.read_text()
    assert report["replicas"][0]["bake"]["phase"] == "passed"
    assert report["replicas"][0]["bake"]["accept_length"] > 2
    # Its windows, kept for a timeline drawn without Prometheus: each ended within the rollout, in order.
    windows = report["replicas"][0]["bake"]["windows"]
    assert len(windows) == 3, windows
    assert all(w["tokens_per_s"] > 0 for w in windows), windows
    assert [w["at"] for w in windows] == sorted(w["at"] for w in windows)
    assert wait_router_healthy() == {f"http://127.0.0.1:{port}": True for port in REPLICAS.values()}
    # The router's and the monitor's plays, which end every rollout, found the router's install and Prometheus's setup
    # as the last full run left them: one host call each said so, and no install or write task ran.
    stages = {"Ask whether the router's install": ("Install the pinned router", "Write the router's unit"),
              "Ask whether Prometheus is set up": ("Install Prometheus", "Write the scrape configuration")}
    for question, work in stages.items():
        stage = [e["event_data"]["res"] for e in run.events if e.get("event") == "runner_on_ok"
                 and e["event_data"].get("task", "").startswith(question)]
        assert [(s["converged"], s["differences"]) for s in stage] == [(True, [])], (question, stage)
        assert [hosts_that_ran(run, task) for task in work] == [[], []], question
    # Each replica's node exporter likewise: the canary's as its last full setup left it, one call and nothing
    # installed or written; the second replica's edited drop-in sent it down the setup, which put the mode back.
    exporter = {e["event_data"]["host"]: e["event_data"]["res"] for e in run.events if e.get("event") == "runner_on_ok"
                and e["event_data"].get("task", "").startswith("Ask whether the node exporter is set up")}
    assert (exporter["specgate-fleet-a"]["converged"], exporter["specgate-fleet-b"]["converged"]) == (True, False)
    assert any(EXPORTER_DROPIN in d for d in exporter["specgate-fleet-b"]["differences"]), exporter
    assert hosts_that_ran(run, "Install the node exporter") == ["specgate-fleet-b"]
    assert hosts_that_ran(run, "Write the drop-in with the port Prometheus scrapes") == ["specgate-fleet-b"]
    assert host("specgate-fleet-b").file(EXPORTER_DROPIN).mode == 0o644
    assert host("specgate-fleet-b").service("prometheus-node-exporter").is_running
    # Each replica's service and gate settings were judged once, by deploy.yml's validate entry points: the stages'
    # own runs found the same inputs judged (tests/integration/test_validate_once.py holds the rule).
    for judged in ("Check the restart protocol's bounds", "Check the run counts and the confidence level"):
        assert hosts_that_ran(run, judged) == list(REPLICAS), judged
    # The timeline: each replica's steps in the order it took them, the canary's all before the second one left,
    # drawn over the curves the fleet's Prometheus (the router's host) recorded meanwhile.
    marks = {row["host"]: row["marks"] for row in report["replicas"]}
    for name in REPLICAS:
        assert sorted(marks[name], key=marks[name].get) == ["leave", "switch", "gate", "rejoin"], marks
    assert marks["specgate-fleet-a"]["rejoin"] < marks["specgate-fleet-b"]["leave"]
    assert "](timeline.png)" in markdown.read_text()
    (picture,) = (tmp_path / "reports").glob("*/timeline.png")
    assert picture.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    drawn = [e["event_data"]["res"] for e in run.events if e.get("event") == "runner_on_ok"
             and e["event_data"].get("task", "").startswith("Draw timeline.png")][-1]
    assert (drawn["source"], drawn["note"]) == ("prometheus", ""), drawn
    assert min(drawn["samples"].values()) > 0, drawn
    # A rollout that went as planned fires no alert (the fleet's windows are 8 s: host_vars/specgate-fleet-lb.yml);
    # a replica out of the router or restarting is at most pending meanwhile, and nothing is left once it is over.
    assert alerts.fired() == set(), alerts.seen
    assert wait_no_alerts() == []
    served = {sample["metric"]["host"]: sample["metric"]["release"]
              for sample in prometheus("/api/v1/query", query="specgate_release_info")["result"]}
    assert served == {name: now[name][0] for name in REPLICAS}  # the new release, on each replica


def test_a_second_replica_whose_candidate_is_worse_is_rolled_back_and_the_canary_stays_promoted(tmp_path) -> None:
    """The canary passes and is promoted; the next batch's replica gates a worse candidate (the sim's acceptance
    knob on that host only): it is rolled back and serves its old release, and the play fails with the reason."""
    known = releases()
    worse_on_b = ("{{ " + json.dumps(SIM_ENV | {"SPECGATE_SIM_SEED": "19"})
                  + " | combine({'SPECGATE_SIM_ACCEPT_MULTIPLIER': '0.3'} if inventory_hostname == 'specgate-fleet-b'"
                  + " else {}) }}")
    run = rollout(tmp_path, {"sglang_service_extra_env": worse_on_b})
    assert run.status == "failed"
    messages = " ".join(failure_messages(run))
    assert "Rollout stopped" in messages
    assert "specgate-fleet-b rolled back" in messages
    assert "spec_gate_min_accept_length" in messages  # the metric and its threshold, with the measured value
    assert "Replicas already promoted stay promoted (specgate-fleet-a)" in messages
    now = releases()
    assert now["specgate-fleet-a"][0] != known["specgate-fleet-a"][0]  # the canary switched
    assert now["specgate-fleet-a"][0] == now["specgate-fleet-a"][1]  # and stays promoted
    assert now["specgate-fleet-b"] == known["specgate-fleet-b"]  # back on its old release
    report = the_report(tmp_path)
    assert [(row["host"], row["batch"], row["outcome"]) for row in report["replicas"]] == [
        ("specgate-fleet-a", 1, "promoted"), ("specgate-fleet-b", 2, "rolled back"),
    ]
    assert "Rollout stopped" in report["rollout"]["stopped"]
    markdown = (Path(report["rollout"]["reports_dir"]) / "fleet.md").read_text()
    assert "| 2 | specgate-fleet-b | rolled back |" in markdown
    assert wait_router_healthy() == {f"http://127.0.0.1:{port}": True for port in REPLICAS.values()}


def test_a_bake_that_sees_the_canary_fall_back_to_plain_decoding_rolls_it_back_and_stops(tmp_path) -> None:
    """The canary passes its gate, then decodes without speculation under live traffic (SGLang's silent fallback,
    the sim's fallback file): the bake fails it, known-good is restored, and the second replica is never touched."""
    known = releases()
    fallback = "/run/specgate-sim-fallback"

    def fall_back_once_baking(event: dict) -> bool:
        data = event.get("event_data", {})
        if (event.get("event") == "runner_on_start" and data.get("host") == "specgate-fleet-a"
                and data.get("task", "").startswith("Watch the replica's acceptance")):
            host("specgate-fleet-a").run(f"touch {fallback}")
        return True

    try:
        with router_client() as client, AlertWatch() as alerts:
            run = rollout(
                tmp_path,
                {"sglang_service_extra_env": {**SIM_ENV, "SPECGATE_SIM_SEED": "13",
                                              "SPECGATE_SIM_FALLBACK_FILE": fallback},
                 "fleet_rollout_bake_seconds": 15, "fleet_rollout_bake_interval": 3},
                event_handler=fall_back_once_baking,
            )
    finally:
        host("specgate-fleet-a").run(f"rm -f {fallback}")
    assert run.status == "failed"
    messages = " ".join(failure_messages(run))
    assert "fleet_rollout_bake_min_accept_length" in messages
    assert "Rollout stopped" in messages
    assert releases() == known  # canary back on its known-good release; the second replica untouched
    assert client.failed == [], client.failed[:5]  # out of the router before the restart back
    report = the_report(tmp_path)
    rows = {row["host"]: row for row in report["replicas"]}
    assert rows["specgate-fleet-a"]["outcome"] == "rolled back"
    assert rows["specgate-fleet-a"]["bake"]["phase"] == "failed"
    assert rows["specgate-fleet-b"]["outcome"] == "not started"
    assert wait_router_healthy() == {f"http://127.0.0.1:{port}": True for port in REPLICAS.values()}
    # The fleet's Prometheus saw it too: the fallback alert went pending (or fired) for the canary, and only for it.
    fallback_alerts = {(host_name, state) for name, host_name, state in alerts.seen
                       if name == "SpecgateSpeculationFallback"}
    assert {host_name for host_name, _ in fallback_alerts} == {"specgate-fleet-a"}, alerts.seen


def engine_started_at(name: str) -> str:
    return host(name).run("systemctl show sglang -p ActiveEnterTimestampMonotonic").stdout.strip()


class BusyReplica:
    """Requests straight to one replica, several at once and back to back, so its own queue never empties."""

    def __init__(self, port: int, streams: int = 4) -> None:
        self.url = f"http://127.0.0.1:{port}/generate"
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, daemon=True) for _ in range(streams)]

    def _run(self) -> None:
        with httpx.Client(timeout=120, headers={"Authorization": f"Bearer {KEY}"}) as client:
            while not self._stop.is_set():
                try:
                    client.post(self.url, json={"text": "def long_story():", "sampling_params": {
                        "max_new_tokens": 4000, "ignore_eos": True}})
                except httpx.HTTPError:
                    time.sleep(0.2)

    def start(self) -> None:  # at the first call only: the event that calls it may come more than once
        for thread in self._threads:
            if not thread.is_alive() and thread.ident is None:
                thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=120)


def test_a_drain_that_times_out_leaves_the_replica_unrestarted_and_stops_the_rollout(tmp_path) -> None:
    """The canary still has requests of its own when the drain's time is up: it is not restarted (its release never
    changed), it goes back behind the router serving that release, and the second replica is never touched."""
    known = releases()
    started_at = engine_started_at("specgate-fleet-a")
    busy = BusyReplica(REPLICAS["specgate-fleet-a"])

    def keep_the_canary_busy(event: dict) -> bool:
        data = event.get("event_data", {})
        if (event.get("event") == "runner_on_start" and data.get("host") == "specgate-fleet-a"
                and data.get("task", "").startswith("Take the worker out of the router")):
            busy.start()
        return True

    try:
        run = rollout(tmp_path, {"sglang_service_extra_env": {**SIM_ENV, "SPECGATE_SIM_SEED": "17"},
                                 "sglang_router_drain_timeout": 4}, event_handler=keep_the_canary_busy)
    finally:
        busy.stop()
    assert run.status == "failed"
    messages = " ".join(failure_messages(run))
    assert "the worker did not drain" in messages
    assert "sglang_router_drain_timeout" in messages  # the fix names the variable
    assert "Rollout stopped" in messages
    assert "not started: specgate-fleet-b" in messages
    assert releases() == known  # never switched
    assert engine_started_at("specgate-fleet-a") == started_at  # nor restarted
    report = the_report(tmp_path)
    assert [(row["host"], row["outcome"]) for row in report["replicas"]] == [
        ("specgate-fleet-a", "failed"), ("specgate-fleet-b", "not started"),
    ]
    # The drain's failure put the canary back: the router lists both replicas healthy again.
    assert wait_router_healthy() == {f"http://127.0.0.1:{port}": True for port in REPLICAS.values()}


def test_an_unreachable_replica_stops_the_rollout_and_is_reported(tmp_path) -> None:
    subprocess.run(["podman", "stop", "-t", "5", "specgate-fleet-b"], check=True, capture_output=True)
    try:
        # The configuration that serves (the passing rollout's): the reachable replica's run changes nothing, the
        # other one is gone.
        # Both in one batch: the router may then be left with none of them (min 0), which the plan allows.
        run = rollout(tmp_path, {"fleet_rollout_serial": ["100%"], "sglang_router_min_healthy_workers": 0,
                                 "sglang_service_extra_env": {**SIM_ENV, "SPECGATE_SIM_SEED": "11"}})
    finally:
        subprocess.run(["podman", "start", "specgate-fleet-b"], check=True, capture_output=True)
    assert run.status == "failed"
    messages = " ".join(failure_messages(run))
    assert "specgate-fleet-b unreachable" in messages
    report = the_report(tmp_path)
    assert dict((row["host"], row["outcome"]) for row in report["replicas"])["specgate-fleet-b"] == "unreachable"


@pytest.fixture(autouse=True, scope="module")
def _fleet_back_in_service():
    """Leave the fleet serving for the next test (a replica restarted by the unreachable test comes back itself)."""
    yield
    wait_router_healthy(deadline_s=120)
