"""A grid sweep whose points each name their own drafter, end to end through playbooks/sweep.yml on the demo, over
the scenario's own SSH path: the block-8 point serves the block-8 drafter, the block-16 point the block-16 one (which
the weights stage fetched before the first launch), and the last point launched crashes on start; its row says why,
and known-good is put back and serves. The restore after a crashed last point is the regression test for the bug
where it failed on systemd's NRestarts (the crash left the unit restarting, and the restore read that as its own
failure)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import ansible_runner
import httpx
import pytest
import yaml

INSTANCE = f"specgate-{os.environ['MOLECULE_SCENARIO_NAME']}"
testinfra_hosts = [f"podman://{INSTANCE}"]

PROJECT = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"])
EPHEMERAL = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"])
SCENARIO = Path(os.environ["MOLECULE_SCENARIO_DIRECTORY"])
B8_DRAFTER = "/models/specgate-fixtures/kimi-k26-dflash-b8"
B16_DRAFTER = "/models/specgate-fixtures/kimi-k26-dflash-b16"
API_KEY = "sk-specgate-demo"  # the demo vault's
SUMMARY = "Summary - what this run left on the host"
LAUNCH = "Say which point starts, how far the sweep is, and its ETA"
# A short load and simulated time at a fifth (as molecule/gate's sweep): three launches in minutes, not tens of them.
SIM_ENV = {"SPECGATE_SIM_LOAD_SECONDS": "1", "SPECGATE_SIM_START_SECONDS": "0.3", "SPECGATE_SIM_TIME_SCALE": "0.2"}
# Launched in this order (sub-grids in order): the last, on the block-16 drafter too, crashes while loading.
GRID = [
    {"name": "b8", "axes": {"algorithm": ["DFLASH"], "block_size": [8]}, "drafter": "dflash-b8",
     "vars": {"sglang_service_extra_env": SIM_ENV}},
    {"name": "b16", "axes": {"algorithm": ["DFLASH"], "block_size": [16]}, "drafter": "dflash-b16",
     "vars": {"sglang_service_extra_env": SIM_ENV}},
    {"name": "crash", "axes": {"algorithm": ["DFLASH"], "block_size": [16], "parallel": ["crash"]},
     "drafter": "dflash-b16", "vars": {"sglang_service_extra_env": SIM_ENV},
     "parallel_presets": {"crash": {"sglang_service_extra_env": {**SIM_ENV,
                                                                 "SPECGATE_SIM_FAULT_CRASH_DURING_LOAD": "1"}}}},
]  # fmt: skip
ROWS = ("dflash-bs8.json", "dflash-bs16.json", "dflash-bs16-crash.json")
SWEEP_ID = "drafters"


def _pointer(host, name: str) -> str:
    return Path(host.file(f"/opt/specgate/{name}").linked_to).name


def _failures(run: ansible_runner.Runner) -> list:
    return [(e["event_data"].get("task"), e["event_data"]["res"].get("msg"))
            for e in run.events if e["event"] in ("runner_on_failed", "runner_on_unreachable")
            and not e["event_data"].get("ignore_errors")]  # fmt: skip


@pytest.fixture(scope="module")
def sweep(host, tmp_path_factory):
    """The sweep, run once for the module: (runner, its events, the sweep's results dir, known-good before it)."""
    # The block-16 drafter must come from this sweep's weights stage, not from an earlier test's profile swap.
    assert host.run(f"rm -rf {B16_DRAFTER}").rc == 0
    known_good = _pointer(host, "known-good")
    private = tmp_path_factory.mktemp("sweep-drafters")
    reports = private / "reports"
    args = yaml.safe_load((SCENARIO / "molecule.yml").read_text())["provisioner"]["ansible_args"]
    run = ansible_runner.run(
        private_data_dir=str(private),
        project_dir=str(PROJECT),
        playbook=str(PROJECT / "playbooks" / "sweep.yml"),
        inventory=str(EPHEMERAL / "inventory"),
        extravars={
            **json.loads(args[args.index("-e") + 1]),
            "spec_sweep_id": SWEEP_ID,
            "spec_sweep_grid": GRID,
            "spec_sweep_reports_dir": str(reports),
            # Each point's row and every use case's winner need measured cells, not the demo's 24-cell benchmark:
            # the acceptance set and the regression cell (the summary reads the shortest context and the lowest and
            # highest concurrency of what ran).
            "spec_gate_bench_sets": ["code", "chat"],
            "spec_gate_bench_contexts": [{"name": "short", "tokens": 128}],
            "spec_gate_bench_concurrency": [1],
        },
        envvars={"ANSIBLE_CONFIG": str(PROJECT / "ansible.cfg")},
        quiet=True,
    )
    events = list(run.events)
    return run, events, reports / INSTANCE / "sweeps" / SWEEP_ID, known_good


def _rows(out: Path) -> list[dict]:
    return [json.loads((out / name).read_text()) for name in ROWS]


def _release_server(host, release: str) -> dict:
    return yaml.safe_load(host.file(f"/opt/specgate/releases/{release}/server.yaml").content_string)


def test_the_sweep_succeeds_and_puts_known_good_back_after_the_crashed_last_point(host, sweep):
    run, _, _, known_good = sweep
    assert run.status == "successful", _failures(run)
    # The crash was the last launch: the restore came after a unit left restarting, and it must still succeed.
    assert _pointer(host, "active") == _pointer(host, "known-good") == known_good
    assert host.service("sglang").is_running
    served = yaml.safe_load(host.file("/opt/specgate/active/server.yaml").content_string)
    assert served["speculative-draft-model-path"] == B8_DRAFTER, "the standing profile's drafter serves again"
    # Host networking: the container's port is the controller's loopback port; the engine itself says what it loaded.
    port = os.environ["SPECGATE_VERIFY_SERVICE_PORT"]
    info = httpx.get(f"http://127.0.0.1:{port}/server_info", headers={"Authorization": f"Bearer {API_KEY}"}, timeout=10)
    assert info.status_code == 200, host.run("journalctl -u sglang --no-pager -n 40").stdout
    assert info.json()["speculative_draft_model_path"] == B8_DRAFTER


def test_each_point_served_with_its_own_drafter(host, sweep):
    _, _, out, _ = sweep
    b8, b16, crash = _rows(out)
    assert [r["status"] for r in (b8, b16, crash)] == ["ok", "ok", "failed"]
    for row, name, path, block in ((b8, "dflash-b8", B8_DRAFTER, 8), (b16, "dflash-b16", B16_DRAFTER, 16)):
        assert row["drafter"]["name"] == name, row["drafter"]
        assert row["drafter"]["path"] == path, row["drafter"]
        assert row["trained_block_size"] == block
        assert row["speed_c1_short"] > 0
        # The release the point ran as, on the host: the server was started on that drafter at that block size.
        server = _release_server(host, row["release"])
        assert server["speculative-draft-model-path"] == path, server
        assert server["speculative-dflash-block-size"] == block, server
    assert b8["release"] != b16["release"]


def test_the_block_16_drafter_was_fetched_before_the_first_launch(host, sweep):
    _, events, _, _ = sweep
    assert host.file(f"{B16_DRAFTER}/.specgate-manifest.json").exists, "the sweep's weights stage fetched it"
    published = [i for i, e in enumerate(events) if e["event"] == "runner_on_ok"
                 and "specgate_weights" in e["event_data"]["res"].get("ansible_facts", {})]  # fmt: skip
    launches = [
        i
        for i, e in enumerate(events)
        if e["event"] == "runner_on_ok" and (e["event_data"].get("task") or "").startswith(LAUNCH)
    ]
    assert published, "the weights stage published specgate_weights"
    assert len(launches) == 3, launches
    drafters = events[published[-1]]["event_data"]["res"]["ansible_facts"]["specgate_weights"]["drafters"]
    assert drafters["dflash-b16"]["path"] == B16_DRAFTER, drafters
    assert drafters["dflash-b16"]["drafter"]["block_size"] == 16, drafters
    assert published[-1] < launches[0], "the weights stage published the drafters before the first point started"


def test_the_crashed_last_point_is_recorded_failed_with_its_reason(sweep):
    _, events, out, _ = sweep
    crash = _rows(out)[2]
    (last_launch,) = [e for e in events if (e.get("event_data", {}).get("task") or "").startswith(LAUNCH)
                      and e["event"] == "runner_on_ok"][-1:]  # fmt: skip
    assert "sweep point 3 of 3: dflash-bs16-crash" in last_launch["event_data"]["res"]["msg"], "it was the last launch"
    assert crash["failed"] is True
    assert "did not become ready" in crash["reason"], crash["reason"]
    # sweep.md: the crash's row stays one table row; its journal (the engine's own error) follows the table whole.
    markdown = (out / "sweep.md").read_text()
    table = markdown.split("| config |", 1)[1].split("\n\n", 1)[0].splitlines()[2:]
    assert [line.split(" | ", 1)[0] for line in table] == ["| dflash-bs8", "| dflash-bs16", "| dflash-bs16-crash"]
    assert "FAULT_CRASH_DURING_LOAD" in markdown.split("## Failed", 1)[1].split("\n## ", 1)[0]
    (summary,) = [e["event_data"]["res"]["msg"] for e in events
                  if e["event"] == "runner_on_ok" and e["event_data"].get("task") == SUMMARY]  # fmt: skip
    assert "2 of 3 config(s) measured, failed: dflash-bs16-crash" in summary, summary
    assert "(known-good)\n" in summary, summary
    assert "(unchanged)" in summary, summary


def test_the_report_names_each_winners_drafter(sweep):
    _, _, out, _ = sweep
    report = json.loads((out / "sweep.json").read_text())
    assert set(report["winners"]) == {"latency", "long_context", "throughput"}
    markdown = (out / "sweep.md").read_text()
    for use_case, win in report["winners"].items():
        drafter = {"dflash-bs8": ("dflash-b8", B8_DRAFTER), "dflash-bs16": ("dflash-b16", B16_DRAFTER)}[win["name"]]
        assert (win["drafter"]["name"], win["drafter"]["path"]) == drafter, (use_case, win)
        assert f"model_weights_drafter: {drafter[0]}" in win["inventory"], (use_case, win["inventory"])
        section = markdown.split(f"## {use_case}: {win['name']}", 1)[1].split("\n## ", 1)[0]
        assert f"- drafter {drafter[0]}" in section, section
