"""deploy.yml's fleet plumbing with Ansible itself, on local hosts: the plan play's refusals (naming the variable,
before any host changes), the serial keyword reading the inventory's plan, and the end-of-batch verdict that stops
later batches, as the real deploy.yml composes them (the same role entry points, a stand-in for the stages)."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

import ansible_runner
import pytest
import yaml

PROJECT_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(PROJECT_ROOT / "scripts"))
from run_changes import host_changes, report_writes  # noqa: E402 - a script module, found through the path above

# The deploy play's shape (playbooks/deploy.yml): the plan play, then serial batches whose always runs finish. The
# stage stand-in fails a host named in `fail_hosts` as a gate would (a rolled-back verdict) or promotes it.
PLAYBOOK = """
- name: Plan
  hosts: sglang_hosts
  gather_facts: false
  tasks:
    - ansible.builtin.import_role: {name: fleet_rollout, tasks_from: plan}

- name: Deploy
  hosts: sglang_hosts
  serial: "{{ hostvars[ansible_play_hosts_all | first].specgate_rollout.batch_sizes if hostvars is defined else 0 }}"
  gather_facts: false
  tasks:
    - block:
        - name: Stand in for the stages and the gate
          ansible.builtin.set_fact:
            specgate_verdict:
              phase: "{{ 'Failed' if inventory_hostname in fail_hosts else 'Successful' }}"
              decision: "{{ 'rollback' if inventory_hostname in fail_hosts else 'promote' }}"
              message: "{{ 'Acceptance length measured 1.02; the gate requires at least 3 (spec_gate_min_accept_length)'
                           if inventory_hostname in fail_hosts else '' }}"
              metrics: []
            specgate_release:
              id: new
              previous_active_id: old
              active_id: "{{ 'old' if inventory_hostname in fail_hosts else 'new' }}"
            stand_in_batch: "{{ ansible_play_batch }}"
        - name: Fail as the gate does
          ansible.builtin.fail: {msg: "{{ specgate_verdict.message }}"}
          when: inventory_hostname in fail_hosts
      rescue:
        - ansible.builtin.set_fact:
            specgate_failure: {task: "{{ ansible_failed_task.name }}", msg: "{{ ansible_failed_result.msg }}"}
        - ansible.builtin.fail: {msg: "{{ specgate_failure.msg }}"}
      always:
        - ansible.builtin.import_role: {name: fleet_rollout, tasks_from: finish}
"""

# Each test runs the rollout playbook over several local hosts: the slow tier (scripts/test --no-molecule --slow).
pytestmark = pytest.mark.slow


def run(tmp_path: Path, hosts: list[str], group_vars: dict, fail_hosts: list[str] | None = None,
        host_vars: dict | None = None, *, limit: str | None = None,
        node_groups: dict[str, list[str]] | None = None) -> ansible_runner.Runner:
    """``node_groups``: inventory groups whose hosts are one multi-node deployment (sglang_service_nodes_group)."""
    (tmp_path / "project").mkdir(parents=True)
    (tmp_path / "private").mkdir()
    (tmp_path / "project" / "play.yml").write_text(PLAYBOOK)
    grouped = {node: group for group, nodes in (node_groups or {}).items() for node in nodes}
    inventory = {"all": {"children": {"sglang_hosts": {
        "hosts": {h: {"ansible_connection": "local", **(host_vars or {}).get(h, {}),
                      **({"sglang_service_nodes_group": grouped[h]} if h in grouped else {})} for h in hosts},
        "vars": {"fleet_rollout_reports_dir": str(tmp_path / "reports"), **group_vars},
    }, **{group: {"hosts": {node: {} for node in nodes}} for group, nodes in (node_groups or {}).items()}}}}
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(inventory, sort_keys=False))  # play order
    return ansible_runner.run(
        private_data_dir=str(tmp_path / "private"), project_dir=str(tmp_path / "project"), playbook="play.yml",
        inventory=str(tmp_path / "inventory.yml"), extravars={"fail_hosts": fail_hosts or []}, quiet=True,
        limit=limit,
        envvars={"ANSIBLE_CONFIG": str(PROJECT_ROOT / "ansible.cfg"), "ANSIBLE_FACT_CACHING": "memory",
                 "ANSIBLE_ROLES_PATH": str(PROJECT_ROOT / "roles")},
    )


def messages(runner: ansible_runner.Runner) -> str:
    return " ".join(str(e["event_data"].get("res", {}).get("msg", "")) for e in runner.events
                    if e.get("event") == "runner_on_failed")


def hosts_of_task(runner: ansible_runner.Runner, task: str) -> list[str]:
    return [e["event_data"]["host"] for e in runner.events
            if e.get("event") in ("runner_on_ok", "runner_on_failed") and e["event_data"].get("task") == task]


def report(tmp_path: Path) -> dict:
    (path,) = (tmp_path / "reports").glob("*/fleet.json")
    return json.loads(path.read_text())


HOSTS = ["h1", "h2", "h3", "h4", "h5"]


def test_batches_follow_the_inventorys_serial_and_all_pass(tmp_path) -> None:
    runner = run(tmp_path, HOSTS, {"fleet_rollout_serial": [1, 2, "100%"]})
    assert runner.status == "successful", messages(runner)
    rows = report(tmp_path)["replicas"]
    assert [(r["host"], r["batch"], r["outcome"]) for r in rows] == [
        ("h1", 1, "promoted"), ("h2", 2, "promoted"), ("h3", 2, "promoted"), ("h4", 3, "promoted"),
        ("h5", 3, "promoted"),
    ]


def test_the_report_writes_on_the_controller_say_they_changed_and_are_a_runs_only_changes(tmp_path) -> None:
    """#31: no `changed_when: false` on the report. Each batch rewrites the report (a new directory for the first),
    counted on the batch's first host; the stand-in stages change nothing, so the report writes are all there is."""
    runner = run(tmp_path, HOSTS[:2], {"fleet_rollout_serial": [1]})
    assert runner.status == "successful", messages(runner)
    assert host_changes(runner.events) == []
    timeline = ("Draw timeline.png - live acceptance and tokens/s per replica, with each one's leave, switch, gate and "
                "rejoin")
    assert report_writes(runner.events) == [
        "Make the rollout's report directory", "Write fleet.json - the plan and one row per replica",
        "Write fleet.md - the table a person reads", timeline,  # batch 1
        "Write fleet.json - the plan and one row per replica", "Write fleet.md - the table a person reads",  # batch 2
        timeline,
    ]
    assert runner.stats["changed"] == {"h1": 4, "h2": 3}


def test_a_failed_canary_stops_the_rollout_before_the_next_batch(tmp_path) -> None:
    runner = run(tmp_path, HOSTS, {}, fail_hosts=["h1"])
    assert runner.status == "failed"
    assert hosts_of_task(runner, "Stand in for the stages and the gate") == ["h1"]  # no later batch started
    text = messages(runner)
    assert "Rollout stopped" in text
    assert "h1 rolled back" in text
    assert "spec_gate_min_accept_length" in text
    assert "not started: h2, h3, h4, h5" in text
    rows = {r["host"]: r["outcome"] for r in report(tmp_path)["replicas"]}
    assert rows == {"h1": "rolled back", "h2": "not started", "h3": "not started", "h4": "not started",
                    "h5": "not started"}


def test_a_failure_within_the_budget_lets_the_rollout_go_on(tmp_path) -> None:
    runner = run(tmp_path, HOSTS, {"fleet_rollout_serial": [1, 4], "fleet_rollout_max_fail_percentage": 25},
                 fail_hosts=["h3"])
    assert runner.status == "failed"  # h3 itself failed its gate
    assert "Rollout stopped" not in messages(runner)
    rows = {r["host"]: r["outcome"] for r in report(tmp_path)["replicas"]}
    assert rows["h3"] == "rolled back"
    assert [h for h, outcome in rows.items() if outcome == "promoted"] == ["h1", "h2", "h4", "h5"]


def test_a_failure_beyond_the_budget_stops_the_hosts_of_the_batch_after_their_own_verdict(tmp_path) -> None:
    runner = run(tmp_path, HOSTS, {"fleet_rollout_serial": [1, 2, "100%"]}, fail_hosts=["h2"])
    assert runner.status == "failed"
    rows = {r["host"]: r["outcome"] for r in report(tmp_path)["replicas"]}
    assert rows == {"h1": "promoted", "h2": "rolled back", "h3": "promoted", "h4": "not started",
                    "h5": "not started"}  # h3 finished its own gate; the stop came at the batch's end
    assert "Replicas already promoted stay promoted (h1, h3)" in messages(runner)


def test_one_replica_of_a_fleet_behind_a_router_may_be_rolled_alone(tmp_path) -> None:
    # -l h2: the play has one host, the router still fronts all three; one out leaves two, above the floor of 1.
    runner = run(tmp_path, ["h1", "h2", "h3"], {"fleet_rollout_router": "h1"}, limit="h2")
    assert runner.status == "successful", messages(runner)
    assert [(r["host"], r["outcome"]) for r in report(tmp_path)["replicas"]] == [("h2", "promoted")]


def batches_run(runner: ansible_runner.Runner) -> list[list[str]]:
    """The batches Ansible ran, in order: each stand-in's ansible_play_batch, once per batch."""
    out: list[list[str]] = []
    for event in runner.events:
        if (event.get("event") == "runner_on_ok"
                and event["event_data"].get("task") == "Stand in for the stages and the gate"):
            batch = list(event["event_data"]["res"]["ansible_facts"]["stand_in_batch"])
            if batch not in out:
                out.append(batch)
    return out


PAIR = {"pair": ["g1", "g2"]}


def test_a_node_group_is_one_replica_its_nodes_in_one_batch_and_one_report_row(tmp_path) -> None:
    """#31: batches count replicas, and Ansible's serial gets each batch's host count, so a group is never split."""
    runner = run(tmp_path, ["h1", "g1", "g2", "h2"], {"fleet_rollout_serial": [1, "50%"]}, node_groups=PAIR)
    assert runner.status == "successful", messages(runner)
    assert batches_run(runner) == [["h1"], ["g1", "g2"], ["h2"]]
    rows = report(tmp_path)["replicas"]
    assert [(r["replica"], r["nodes"], r["host"], r["batch"], r["outcome"]) for r in rows] == [
        ("h1", ["h1"], "h1", 1, "promoted"), ("pair", ["g1", "g2"], "g1", 2, "promoted"),
        ("h2", ["h2"], "h2", 3, "promoted")]
    (markdown,) = (tmp_path / "reports").glob("*/fleet.md")
    assert "| 2 | pair (g1, g2) | promoted |" in markdown.read_text()


def test_a_failed_node_group_stops_the_rollout_named_with_its_nodes(tmp_path) -> None:
    runner = run(tmp_path, ["g1", "g2", "h1"], {"fleet_rollout_serial": [1]}, fail_hosts=["g1", "g2"],
                 node_groups=PAIR)
    assert runner.status == "failed"
    # Both nodes of the group ran in one batch, in parallel forks (either may finish first); h1 never started.
    assert sorted(hosts_of_task(runner, "Stand in for the stages and the gate")) == ["g1", "g2"]
    text = messages(runner)
    assert "Rollout stopped: 1 of 1 replica(s) in this batch failed" in text
    assert "pair (g1, g2) rolled back" in text
    assert "not started: h1" in text
    assert {r["replica"]: r["outcome"] for r in report(tmp_path)["replicas"]} == {"pair": "rolled back",
                                                                                "h1": "not started"}


@pytest.mark.parametrize(
    ("group_vars", "host_vars", "variable"),
    [
        ({"fleet_rollout_serial": [0]}, None, "fleet_rollout_serial"),
        ({"fleet_rollout_serial": ["quarter"]}, None, "fleet_rollout_serial"),
        ({"fleet_rollout_max_fail_percentage": 120}, None, "fleet_rollout_max_fail_percentage"),
        ({"fleet_rollout_router": "lb9"}, None, "fleet_rollout_router"),
        ({"fleet_rollout_bake_seconds": 10, "fleet_rollout_bake_interval": 5}, None, "fleet_rollout_bake_seconds"),
        ({"fleet_rollout_pause_between_batches": True, "fleet_rollout_pause_timeout": 0}, None,
         "fleet_rollout_pause_timeout"),
        ({}, {"h2": {"fleet_rollout_pause_between_batches": True}}, "fleet_rollout_pause_between_batches"),
        ({}, {"h2": {"fleet_rollout_serial": [2]}}, "fleet_rollout_serial"),
        ({"fleet_rollout_seriall": [1]}, None, "fleet_rollout_seriall"),
        # Both replicas out of the router at once would leave none: refused before the run, not mid-batch.
        ({"fleet_rollout_router": "h1", "fleet_rollout_serial": ["100%"]}, None, "sglang_router_min_healthy_workers"),
    ],
)
def test_the_plan_refuses_bad_settings_before_any_host_changes(tmp_path, group_vars, host_vars, variable) -> None:
    runner = run(tmp_path, ["h1", "h2"], group_vars, host_vars=host_vars)
    assert runner.status == "failed"
    assert variable in messages(runner)
    assert hosts_of_task(runner, "Stand in for the stages and the gate") == []


@pytest.mark.parametrize(
    ("hosts", "node_groups", "refused"),
    [
        # Another host between the group's nodes: a batch could hold part of the group.
        (["g1", "h1", "g2"], PAIR, "node group pair (g1, g2) is one replica of the fleet"),
        # A group of one node cannot be ranked.
        (["g1", "h1"], {"pair": ["g1"]}, "group 'pair' has 1 host(s)"),
        # Two replicas out of a router of two at once (a group counts once): none left serving.
        (["g1", "g2", "h1"], PAIR, "a batch of 2 of the 2"),
    ],
)
def test_the_plan_refuses_a_fleet_whose_batches_cannot_keep_node_groups_whole(tmp_path, hosts, node_groups,
                                                                              refused) -> None:
    settings = {"fleet_rollout_serial": ["100%"], "fleet_rollout_router": "h1"} if "batch of" in refused else {}
    runner = run(tmp_path, hosts, settings, node_groups=node_groups)
    assert runner.status == "failed"
    assert refused in messages(runner)
    assert hosts_of_task(runner, "Stand in for the stages and the gate") == []



def _answer_when_asked(tmp_path: Path, file: str) -> tuple[threading.Thread, dict]:
    """A person at the controller: once the rollout says it waits for batch 2 (waiting-batch-2 in its report
    directory), writes ``file`` there (approve-batch-2, or stop). Returns the thread and when the file was written."""
    written: dict = {}

    def answer() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            waiting = list((tmp_path / "reports").glob("*/waiting-batch-2"))
            if waiting:
                (waiting[0].parent / file).write_text("")
                written["at"] = time.time()
                return
            time.sleep(0.1)

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    return thread, written


def _started(runner: ansible_runner.Runner, host: str) -> float:
    """When the stage stand-in started on ``host`` (its task's event time)."""
    from datetime import datetime

    created = [e["created"] for e in runner.events if e["event"] == "runner_on_start"
               and e["event_data"].get("host") == host
               and e["event_data"].get("task") == "Stand in for the stages and the gate"]  # fmt: skip
    return datetime.fromisoformat(created[0]).timestamp()


APPROVAL = {"fleet_rollout_serial": [1, "100%"], "fleet_rollout_pause_between_batches": True}


def test_a_person_approves_the_next_batch_before_it_starts(tmp_path) -> None:
    answered, written = _answer_when_asked(tmp_path, "approve-batch-2")
    runner = run(tmp_path, ["h1", "h2", "h3"], APPROVAL)
    answered.join(timeout=5)
    assert runner.status == "successful", messages(runner)
    # Asked once, between the two batches, with the command that approves batch 2.
    asked = [e["event_data"]["res"]["msg"] for e in runner.events if e["event"] == "runner_on_ok"
             and e["event_data"]["task"].startswith("Ask a person to approve batch")]
    assert len(asked) == 1, asked
    assert "batch 2 (h2, h3)" in asked[0]
    assert "approve-batch-2 to start it" in asked[0]
    waited = [e["event_data"]["res"] for e in runner.events if e["event"] == "runner_on_ok"
              and e["event_data"]["task"].startswith("Wait on the controller for a stop or the approval of batch")]
    assert [w["decision"] for w in waited] == ["approved"]
    # Batch 2 started only once the person had approved it, and the waiting mark is gone.
    assert _started(runner, "h2") > written["at"]
    assert not list((tmp_path / "reports").glob("*/waiting-batch-*"))
    assert [r["outcome"] for r in report(tmp_path)["replicas"]] == ["promoted"] * 3


def test_a_person_stops_the_rollout_between_batches_and_the_report_says_so(tmp_path) -> None:
    answered, _written = _answer_when_asked(tmp_path, "stop")
    runner = run(tmp_path, ["h1", "h2", "h3"], APPROVAL)
    answered.join(timeout=5)
    assert runner.status == "failed"
    assert hosts_of_task(runner, "Stand in for the stages and the gate") == ["h1"]
    assert "Rollout stopped before batch 2" in messages(runner)
    assert "not started: h2, h3" in messages(runner)
    written = report(tmp_path)
    assert written["rollout"]["stopped"].startswith("Rollout stopped before batch 2")
    assert {r["host"]: r["outcome"] for r in written["replicas"]} == {"h1": "promoted", "h2": "not started",
                                                                  "h3": "not started"}  # fmt: skip


def test_an_unapproved_batch_never_starts_once_the_wait_times_out(tmp_path) -> None:
    runner = run(tmp_path, ["h1", "h2"], {**APPROVAL, "fleet_rollout_pause_timeout": 2})
    assert runner.status == "failed"
    assert hosts_of_task(runner, "Stand in for the stages and the gate") == ["h1"]
    assert "nobody approved it within 2 s (fleet_rollout_pause_timeout" in messages(runner)


def test_a_failed_batch_stops_without_asking_and_the_last_batch_asks_nothing(tmp_path) -> None:
    failed = run(tmp_path / "a", ["h1", "h2"], APPROVAL, fail_hosts=["h1"])
    assert failed.status == "failed"
    assert not [e for e in failed.events if e.get("event_data", {}).get("task", "").startswith("Ask a person")]
    one_batch = run(tmp_path / "b", ["h1", "h2"], {**APPROVAL, "fleet_rollout_serial": ["100%"]})
    assert one_batch.status == "successful", messages(one_batch)
    assert not [e for e in one_batch.events if e.get("event_data", {}).get("task", "").startswith("Ask a person")]
