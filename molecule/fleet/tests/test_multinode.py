"""The two replicas redeployed as one SGLang deployment over two nodes (inventory group fleet_pair), rolled out by
deploy.yml as one replica behind the router beside a single host (specgate-fleet-c).

Runs after test_fleet.py (the fleet's own proofs need the replicas single). Host networking: the nodes share the
machine's loopback, so each binds its own address (rank 0 127.0.0.1, rank 1 127.0.0.2) on the same port, and rank 0's
rendezvous and gated launch answer on 127.0.0.1. The router's workers are the fleet's replicas: the pair's rank 0 and
the single host. A two-node deployment comes up, is gated on rank 0 and promoted on both; a re-run changes nothing; a
rollout takes the pair out of the router at rank 0, restarts both nodes and puts it back while the single host serves,
with no failed request; a candidate that fails its gate, a follower that never joins and one that crashes during the
load each fail the pair naming the node, with both nodes back on known-good and the rollout stopped before the single
host.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import ansible_runner
import httpx
import pytest
import testinfra
import yaml

SCENARIO = Path(os.environ.get("MOLECULE_SCENARIO_DIRECTORY", Path(__file__).resolve().parents[1]))
PROJECT = SCENARIO.parents[1]
sys.path.insert(0, str(PROJECT / "scripts"))
import bench_fleet_rollout as fleet_bench  # noqa: E402 - the benchmark's client, found through the path above
from run_changes import host_changes, report_writes  # noqa: E402 - a script module, found through the path above

# The drain's own reading of a worker's queue, as Ansible imports it (testinfra runs without tests/conftest.py).
sys.path.insert(0, str(PROJECT / "local_collections"))
import ansible_collections.specgate.project.plugins.module_utils.paths  # noqa: E402, F401 - module_utils on the path
from ansible.module_utils.specgate.fleet.worker_drain import LOADS_PATH, parse_loads  # noqa: E402 - path set above

BASE = "/opt/specgate"
RANK0, RANK1, SINGLE = "specgate-fleet-a", "specgate-fleet-b", "specgate-fleet-c"
PORT, SINGLE_PORT = 36010, 36002
ROUTER = "http://127.0.0.1:36050"
WORKERS = {f"http://127.0.0.1:{PORT}": True, f"http://127.0.0.1:{SINGLE_PORT}": True}
KEY = "sk-specgate-demo"
SIM_ENV = {"SPECGATE_SIM_LOAD_SECONDS": "2", "SPECGATE_SIM_TIME_SCALE": "0.2"}
JOIN_TIMEOUT = 30
# The never-joining follower's test waits the deadline out: a shorter one there proves the same (the rollback that
# follows joins within it too, as every deploy here joins within seconds).
SHORT_JOIN_TIMEOUT = 15
IN_PAIR = "inventory_hostname in groups['fleet_pair']"
NODE_VARS = {
    "sglang_service_nodes_group": "{{ 'fleet_pair' if " + IN_PAIR + " else none }}",
    "sglang_service_port": "{{ " + str(PORT) + " if " + IN_PAIR + " else " + str(SINGLE_PORT) + " }}",
    "sglang_service_host": "{{ '127.0.0.2' if inventory_hostname == '" + RANK1 + "' else '127.0.0.1' }}",
    "sglang_service_dist_init_host": "127.0.0.1",
    "sglang_service_dist_init_port": 36020,
    "sglang_service_gated_launch_port": 36030,
    "sglang_service_join_timeout": JOIN_TIMEOUT,
    # The router knows each replica at its API: the pair's rank 0, and the single host.
    "sglang_router_worker_url": "{{ 'http://127.0.0.1:" + str(PORT) + "' if " + IN_PAIR
                                + " else 'http://127.0.0.1:" + str(SINGLE_PORT) + "' }}",
    # Unset: the router's role registers one worker per replica of sglang_hosts (the group at its rank 0).
    "sglang_router_workers": None,
    "fleet_rollout_serial": [1],
    "demo_host_manage_container": False,
}
# The spare host joins the fleet here: the scenario's converge and test_fleet.py roll the two replicas alone.
SPARE_IN_FLEET = {"all": {"children": {"sglang_hosts": {"hosts": {SINGLE: {}}}}}}


def host(name: str):
    return testinfra.get_host(f"podman://{name}")


def pointers(name: str) -> tuple[str, str]:
    node = host(name)
    return tuple(Path(node.file(f"{BASE}/{which}").linked_to).name for which in ("active", "known-good"))


def deploy(tmp_path: Path, extravars: dict | None = None, limit: str = "sglang_hosts",
           event_handler=None) -> ansible_runner.Runner:
    private = tmp_path / f"private-{time.monotonic_ns()}"
    private.mkdir()
    spare = private / "spare.yml"
    spare.write_text(yaml.safe_dump(SPARE_IN_FLEET))
    return ansible_runner.run(
        private_data_dir=str(private), project_dir=str(PROJECT), playbook=str(PROJECT / "deploy.yml"),
        inventory=[os.environ["MOLECULE_INVENTORY_FILE"], str(spare)], limit=limit, event_handler=event_handler,
        extravars={**NODE_VARS, "fleet_rollout_reports_dir": str(tmp_path / "reports"),
                   "sglang_service_extra_env": PAIR_ENV, **(extravars or {})},
        quiet=True,
        envvars={"ANSIBLE_CONFIG": str(PROJECT / "ansible.cfg"), "ANSIBLE_FACT_CACHING": "memory"},
    )


def the_report(tmp_path: Path) -> dict:
    (path,) = (tmp_path / "reports").glob("*/fleet.json")
    return json.loads(path.read_text())


def router_workers() -> dict[str, bool]:
    return {w["url"]: bool(w.get("is_healthy")) for w in httpx.get(f"{ROUTER}/workers", timeout=10).json()["workers"]}


def wait_router(wanted: dict[str, bool], deadline_s: float = 90) -> dict[str, bool]:
    deadline = time.monotonic() + deadline_s
    workers = router_workers()
    while workers != wanted and time.monotonic() < deadline:
        time.sleep(1)
        workers = router_workers()
    return workers


def hosts_that_ran(run: ansible_runner.Runner, task_prefix: str) -> list[str]:
    return [e["event_data"]["host"] for e in run.events
            if e.get("event") == "runner_on_ok" and e["event_data"].get("task", "").startswith(task_prefix)]


def router_traffic() -> fleet_bench.Traffic:
    """Requests through the router as scripts/bench_fleet_rollout.py sends them: long ones, several at a time, so the
    pair leaves with requests running on it, and short ones."""
    return fleet_bench.Traffic(fleet_bench.Client(ROUTER, KEY, 50000, 900, concurrency=6, max_new_tokens=3500),
                               fleet_bench.Client(ROUTER, KEY, 50000, 900, concurrency=2, max_new_tokens=16))


def running_on_pair() -> int:
    """Requests running on the pair's rank 0, read as the drain reads them (the report's in_flight_at_leave)."""
    answer = httpx.get(f"http://127.0.0.1:{PORT}{LOADS_PATH}", headers={"Authorization": f"Bearer {KEY}"}, timeout=10)
    load = parse_loads(answer.json()) if answer.status_code == 200 else None
    return load.running if load else 0


def failure_messages(run: ansible_runner.Runner) -> str:
    return " ".join(str(e["event_data"].get("res", {}).get("msg", ""))
                    for e in run.events if e.get("event") == "runner_on_failed")


def serves(url: str) -> dict:
    answer = httpx.get(f"{url}/server_info", headers={"Authorization": f"Bearer {KEY}"}, timeout=10)
    answer.raise_for_status()
    return answer.json()


def stopped_in_order(run: ansible_runner.Runner) -> list[str]:
    """The nodes whose server the run stopped, in the order it stopped them (rank 0's stop, then the followers')."""
    stops = ("Stop the running server, rank 0 first", "Stop the followers")
    return [e["event_data"]["host"] for e in run.events
            if e.get("event") == "runner_on_ok" and e["event_data"].get("task", "").startswith(stops)]


def follower_joined() -> bool:
    """Rank 1's engine holds its connection to rank 0's rendezvous (ss, as an operator would look: the socket's cgroup
    is the follower's unit)."""
    out = host(RANK1).run("ss -Htne state established dst 127.0.0.1:36020").stdout
    return "system.slice/sglang.service" in out


# A seed of its own makes the pair's first release new wherever the scenario's hosts stand, so its deploy restarts
# both nodes; the other tests deploy the same settings, plus a fault.
PAIR_ENV = {**SIM_ENV, "SPECGATE_SIM_SEED": str(int(time.time()) % 100000)}


@pytest.fixture(scope="module")
def deployed(tmp_path_factory) -> tuple[str, ansible_runner.Runner]:
    """The pair and the single host deployed as the fleet's two replicas. The router forgets the replicas test_fleet.py
    left in it first: the fleet changed shape, which the router's role adds to but never prunes."""
    for worker in httpx.get(f"{ROUTER}/workers", timeout=10).json()["workers"]:
        httpx.delete(f"{ROUTER}/workers/{worker['id']}", timeout=10).raise_for_status()
    # Both replicas in one batch: the router has no worker left to spare yet.
    run = deploy(tmp_path_factory.mktemp("pair"), {"fleet_rollout_serial": ["100%"],
                                                   "sglang_router_min_healthy_workers": 0})
    assert run.status == "successful", failure_messages(run)
    return pointers(RANK0)[0], run


def test_a_run_that_would_restart_one_node_alone_is_refused_before_anything_changes(tmp_path) -> None:
    before = {name: pointers(name) for name in (RANK0, RANK1)}
    run = deploy(tmp_path, limit=RANK1)
    assert run.status == "failed"
    assert f"this run's batch lacks {RANK0}" in failure_messages(run)
    assert "-l fleet_pair" in failure_messages(run)
    assert run.stats["changed"] == {}
    assert {name: pointers(name) for name in (RANK0, RANK1)} == before


def test_a_two_node_deployment_comes_up_gated_on_rank_0_and_promoted_on_both(deployed) -> None:
    release, run = deployed
    assert pointers(RANK0) == (release, release)
    assert pointers(RANK1) == (release, release)  # one release, promoted on every node
    info = serves(f"http://127.0.0.1:{PORT}")
    assert (info["nnodes"], info["node_rank"]) == (2, 0)
    assert info["dist_init_addr"] == "127.0.0.1:36020"
    # The follower serves SGLang's dummy health only, on its own address; the API is rank 0's.
    assert httpx.get(f"http://127.0.0.2:{PORT}/health", timeout=10).status_code == 200
    assert httpx.get(f"http://127.0.0.2:{PORT}/model_info", timeout=10).status_code == 404
    assert follower_joined()
    unit = host(RANK1).file("/etc/systemd/system/sglang.service").content_string
    assert "--node-rank 1 --host 127.0.0.2" in unit
    # The gate measured rank 0 only, and both nodes acted on its verdict.
    assert host(RANK0).file(f"{BASE}/releases/{release}/gate.json").exists
    assert not host(RANK1).file(f"{BASE}/releases/{release}/gate.json").exists
    gate = json.loads(host(RANK0).file(f"{BASE}/releases/{release}/gate.json").content_string)
    assert gate["action"] == "promote"
    # Rank 0 was stopped before the follower, and the gated launch opened once both joined.
    assert [name for name in stopped_in_order(run) if name != SINGLE] == [RANK0, RANK1]
    journal = host(RANK0).run("journalctl -u sglang --no-pager -o cat").stdout
    assert "Gated launch control server started on 127.0.0.1:36030" in journal
    # The router's role registered one worker per replica: the pair at its rank 0, and the single host.
    assert wait_router(WORKERS) == WORKERS


def test_a_rerun_of_the_two_node_deployment_changes_nothing(deployed, tmp_path) -> None:
    release, _ = deployed
    run = deploy(tmp_path, limit="fleet_pair")  # the group's own re-run (a single host's is test_fleet.py's)
    assert run.status == "successful", failure_messages(run)
    assert host_changes(run.events) == []
    assert report_writes(run.events)  # the run's own rollout report, on the controller, says it changed
    assert pointers(RANK0) == pointers(RANK1) == (release, release)


def test_a_rollout_takes_the_pair_out_at_rank_0_restarts_both_nodes_and_puts_it_back_without_a_failed_request(
        deployed, tmp_path) -> None:
    """#31: the group is one replica: one batch of its own (serial [1] counts replicas), out of the router at rank 0
    and drained there while the single host serves, both nodes restarted and gated on rank 0, back in; then the
    single host's batch."""
    before = {name: pointers(name)[0] for name in (RANK0, RANK1, SINGLE)}
    with router_traffic() as client:
        deadline = time.monotonic() + 60  # the client's long requests reach the pair before the rollout starts
        while running_on_pair() < 1 and time.monotonic() < deadline:
            time.sleep(0.5)
        run = deploy(tmp_path, {"sglang_service_extra_env": {**PAIR_ENV, "SPECGATE_SIM_SEED": str(int(PAIR_ENV[
            "SPECGATE_SIM_SEED"]) + 1)}})
        client.answered_more(3)  # requests keep flowing once the rollout is over
    assert run.status == "successful", failure_messages(run)
    assert client.failed == [], client.failed[:5]
    assert client.ok > 10
    now = {name: pointers(name) for name in (RANK0, RANK1, SINGLE)}
    assert now[RANK0] == now[RANK1]  # one release on both nodes, promoted
    for name in (RANK0, RANK1, SINGLE):
        assert now[name][0] != before[name], name  # switched
        assert now[name][0] == now[name][1], name  # and promoted
    # Only rank 0 left and rejoined the router; the single host went after the pair was back.
    assert hosts_that_ran(run, "Take the worker out of the router") == [RANK0, SINGLE]
    assert hosts_that_ran(run, "Put the worker back behind the router") == [RANK0, SINGLE]
    report = the_report(tmp_path)
    assert [(r["replica"], r["nodes"], r["host"], r["batch"], r["outcome"]) for r in report["replicas"]] == [
        ("fleet_pair", [RANK0, RANK1], RANK0, 1, "promoted"), (SINGLE, [SINGLE], SINGLE, 2, "promoted")]
    pair = report["replicas"][0]
    assert int(pair["router"]["in_flight_at_leave"]) >= 1, pair["router"]  # left with requests running on it
    assert pair["marks"]["rejoin"] < report["replicas"][1]["marks"]["leave"]
    markdown = (Path(report["rollout"]["reports_dir"]) / "fleet.md").read_text()
    assert f"| 1 | fleet_pair ({RANK0}, {RANK1}) | promoted |" in markdown
    assert wait_router(WORKERS) == WORKERS


def test_a_candidate_that_fails_its_gate_on_the_pair_rolls_both_nodes_back_while_the_router_serves(
        deployed, tmp_path) -> None:
    before = {name: pointers(name) for name in (RANK0, RANK1, SINGLE)}
    worse = {**PAIR_ENV, "SPECGATE_SIM_SEED": "23", "SPECGATE_SIM_ACCEPT_MULTIPLIER": "0.3"}
    with router_traffic() as client:
        run = deploy(tmp_path, {"sglang_service_extra_env": worse})
    assert run.status == "failed"
    assert client.failed == [], client.failed[:5]  # the single host served while the pair was out
    messages = failure_messages(run)
    assert f"fleet_pair ({RANK0}, {RANK1}) rolled back" in messages
    assert "spec_gate_min_accept_length" in messages
    assert f"not started: {SINGLE}" in messages
    assert {name: pointers(name) for name in (RANK0, RANK1, SINGLE)} == before  # both nodes back, the host untouched
    assert [(r["replica"], r["outcome"]) for r in the_report(tmp_path)["replicas"]] == [
        ("fleet_pair", "rolled back"), (SINGLE, "not started")]
    assert wait_router(WORKERS) == WORKERS


def test_a_follower_that_never_joins_fails_within_the_deadline_naming_it_and_both_nodes_go_back(deployed, tmp_path):
    release = pointers(RANK0)[1]  # known-good now (the passing rollout's)
    started = time.monotonic()
    run = deploy(tmp_path, {"sglang_service_extra_env": {**PAIR_ENV, "SPECGATE_SIM_FAULT_NEVER_JOIN": "1"},
                            "sglang_service_join_timeout": SHORT_JOIN_TIMEOUT})
    took = time.monotonic() - started
    assert run.status == "failed"
    messages = failure_messages(run)
    assert f"not every node joined the deployment within {SHORT_JOIN_TIMEOUT} s" in messages
    assert f"Node {RANK1} (rank 1): running, but it never joined rank 0 at 127.0.0.1:36020" in messages
    assert f"Rolled back: release {release} is serving again on every node" in messages
    assert took < 600  # the join deadline, not the rendezvous timeout (3600 simulated s)
    assert pointers(RANK0) == pointers(RANK1) == (release, release)
    assert serves(f"http://127.0.0.1:{PORT}")["nnodes"] == 2
    assert follower_joined()


def test_a_follower_that_crashes_during_the_load_fails_at_once_naming_it_and_both_nodes_go_back(deployed, tmp_path):
    release = pointers(RANK0)[1]  # known-good now (the passing rollout's)
    # The load takes 600 simulated s (120 s here); the follower crashes 5 simulated s after joining.
    crash = {**PAIR_ENV, "SPECGATE_SIM_LOAD_SECONDS": "600", "SPECGATE_SIM_FAULT_CRASH_AFTER_JOIN_SECONDS": "5"}
    started = time.monotonic()
    run = deploy(tmp_path, {"sglang_service_extra_env": crash})
    took = time.monotonic() - started
    assert run.status == "failed"
    messages = failure_messages(run)
    assert f"node {RANK1} (rank 1) failed" in messages
    assert "FAULT_CRASH_AFTER_JOIN_SECONDS" in messages  # its journal
    assert f"Rolled back: release {release} is serving again on every node" in messages
    assert took < 400  # rank 0 did not wait out its load (nor NCCL's watchdog)
    assert pointers(RANK0) == pointers(RANK1) == (release, release)
    assert serves(f"http://127.0.0.1:{PORT}")["nnodes"] == 2
    assert follower_joined()
    assert f"fleet_pair ({RANK0}, {RANK1}) failed" in messages  # the replica stopped the rollout
    assert f"not started: {SINGLE}" in messages
    assert wait_router(WORKERS) == WORKERS


def test_rollback_restarts_the_whole_group_when_one_node_is_down(deployed, tmp_path) -> None:
    """playbooks/rollback.yml on a group whose follower died: rank 0 alone cannot serve again (its world is gone),
    so every node restarts onto known-good, rank 0 first down."""
    release = pointers(RANK0)[1]
    host(RANK1).run("systemctl stop sglang")
    private = tmp_path / "private"
    private.mkdir()
    run = ansible_runner.run(
        private_data_dir=str(private), project_dir=str(PROJECT), playbook=str(PROJECT / "playbooks" / "rollback.yml"),
        inventory=os.environ["MOLECULE_INVENTORY_FILE"], limit="fleet_pair",
        extravars={**NODE_VARS, "sglang_service_extra_env": PAIR_ENV}, quiet=True,
        envvars={"ANSIBLE_CONFIG": str(PROJECT / "ansible.cfg"), "ANSIBLE_FACT_CACHING": "memory"},
    )
    assert run.status == "successful", failure_messages(run)
    assert stopped_in_order(run) == [RANK0, RANK1]
    assert pointers(RANK0) == pointers(RANK1) == (release, release)
    assert serves(f"http://127.0.0.1:{PORT}")["nnodes"] == 2
    assert follower_joined()
