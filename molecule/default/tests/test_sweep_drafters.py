"""The README's demo sweep, run as the README shows it over the scenario's own SSH path
(`ansible-playbook playbooks/sweep.yml -i inventory/demo -e @configs/sweeps/demo.yml`, tests/readme_commands.yml):
each DFlash point serves the drafter trained for its block size, the block-16 one fetched by the sweep's weights stage
before the first launch (it is removed first, as on a demo host that never swapped profiles), the baseline serves
without one, and known-good serves again at the end, unchanged. The restore after a crashed last point (the NRestarts
regression) is molecule/gate's configs sweep, whose last config crashes on start."""

from __future__ import annotations

import json
import os
import sys
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
sys.path.insert(0, str(PROJECT / "tests"))
import readme_commands as rc  # noqa: E402 - the project's tests/ is put on the path just above

COMMAND = "ansible-playbook playbooks/sweep.yml -i inventory/demo -e @configs/sweeps/demo.yml"
B8_DRAFTER = "/models/specgate-fixtures/kimi-k26-dflash-b8"
B16_DRAFTER = "/models/specgate-fixtures/kimi-k26-dflash-b16"
DRAFTERS = {"dflash-bs8": ("dflash-b8", B8_DRAFTER, 8), "dflash-bs16": ("dflash-b16", B16_DRAFTER, 16)}
API_KEY = "sk-specgate-demo"  # the demo vault's
SUMMARY = "Summary - what this run left on the host"
LAUNCH = "Say which point starts, how far the sweep is, and its ETA"


def _pointer(host, name: str) -> str:
    return Path(host.file(f"/opt/specgate/{name}").linked_to).name


def _failures(run: ansible_runner.Runner) -> list:
    return [(e["event_data"].get("task"), e["event_data"]["res"].get("msg"))
            for e in run.events if e["event"] in ("runner_on_failed", "runner_on_unreachable")
            and not e["event_data"].get("ignore_errors")]  # fmt: skip


@pytest.fixture(scope="module")
def sweep(host, tmp_path_factory):
    """The README's sweep, run once for the module: (runner, its events, the sweep's results dir, known-good before)."""
    (entry,) = [e for e in rc.registry() if e.command == COMMAND]
    assert (entry.how, entry.detail["value"]) == ("covered_by", "molecule/default/tests/test_sweep_drafters.py")
    # The block-16 drafter must come from this sweep's weights stage, not from an earlier test's profile swap.
    assert host.run(f"rm -rf {B16_DRAFTER}").rc == 0
    known_good = _pointer(host, "known-good")
    # As tests/test_readme_commands.py runs the README's commands: the scenario's host for the demo inventory's.
    run = rc.run_on_demo(entry, tmp_path_factory.mktemp("readme-sweep"), SCENARIO, EPHEMERAL / "inventory", INSTANCE)
    events = list(run.events)
    published = [e["event_data"]["res"]["ansible_facts"]["specgate_sweep"] for e in events
                 if e["event"] == "runner_on_ok"
                 and "specgate_sweep" in e["event_data"]["res"].get("ansible_facts", {})]  # fmt: skip
    assert published, _failures(run)
    return run, events, Path(published[-1]["dir"]), known_good


def _rows(out: Path) -> dict[str, dict]:
    rows = [json.loads(path.read_text()) for path in out.glob("*.json") if path.name not in ("sweep.json",
                                                                                            "manifest.json")]
    return {row["name"]: row for row in rows}


def _release_server(host, release: str) -> dict:
    return yaml.safe_load(host.file(f"/opt/specgate/releases/{release}/server.yaml").content_string)


def test_the_readme_sweep_succeeds_and_puts_known_good_back_unchanged(host, sweep):
    run, events, _, known_good = sweep
    assert run.status == "successful", _failures(run)
    assert _pointer(host, "active") == _pointer(host, "known-good") == known_good
    assert host.service("sglang").is_running
    served = yaml.safe_load(host.file("/opt/specgate/active/server.yaml").content_string)
    assert served["speculative-draft-model-path"] == B8_DRAFTER, "the standing profile's drafter serves again"
    # Host networking: the container's port is the controller's loopback port; the engine itself says what it loaded.
    port = os.environ["SPECGATE_VERIFY_SERVICE_PORT"]
    info = httpx.get(f"http://127.0.0.1:{port}/server_info", headers={"Authorization": f"Bearer {API_KEY}"}, timeout=10)
    assert info.status_code == 200, host.run("journalctl -u sglang --no-pager -n 40").stdout
    assert info.json()["speculative_draft_model_path"] == B8_DRAFTER
    (summary,) = [e["event_data"]["res"]["msg"] for e in events
                  if e["event"] == "runner_on_ok" and e["event_data"].get("task") == SUMMARY]  # fmt: skip
    assert "(known-good)\n" in summary, summary
    assert "(unchanged)" in summary, summary


def test_each_point_served_with_its_own_drafter_and_the_baseline_with_none(host, sweep):
    _, _, out, _ = sweep
    rows = _rows(out)
    assert set(rows) == {"nospec", "dflash-bs8", "dflash-bs16"}, sorted(rows)
    assert {name: row["status"] for name, row in rows.items()} == dict.fromkeys(rows, "ok")
    for name, (drafter, path, block) in DRAFTERS.items():
        row = rows[name]
        assert row["drafter"]["name"] == drafter, row["drafter"]
        assert row["drafter"]["path"] == path, row["drafter"]
        assert row["trained_block_size"] == block
        assert row["speed_c1_short"] > 0
        # The release the point ran as, on the host: the server was started on that drafter at that block size.
        server = _release_server(host, row["release"])
        assert server["speculative-draft-model-path"] == path, server
        assert server["speculative-dflash-block-size"] == block, server
    assert rows["dflash-bs8"]["release"] != rows["dflash-bs16"]["release"]
    baseline = _release_server(host, rows["nospec"]["release"])
    assert "speculative-draft-model-path" not in baseline, baseline
    assert "speculative-algorithm" not in baseline, baseline
    assert rows["nospec"]["speed_c1_short"] > 0


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


def test_the_report_names_each_winners_drafter(sweep):
    _, _, out, _ = sweep
    report = json.loads((out / "sweep.json").read_text())
    assert set(report["winners"]) == {"latency", "long_context", "throughput"}
    markdown = (out / "sweep.md").read_text()
    for use_case, win in report["winners"].items():
        section = markdown.split(f"## {use_case}: {win['name']}", 1)[1].split("\n## ", 1)[0]
        if win["name"] == "nospec":  # the baseline wins with no drafter to name
            assert "model_weights_drafter" not in win["inventory"], (use_case, win["inventory"])
            continue
        drafter, path, _ = DRAFTERS[win["name"]]
        assert (win["drafter"]["name"], win["drafter"]["path"]) == (drafter, path), (use_case, win)
        assert f"model_weights_drafter: {drafter}" in win["inventory"], (use_case, win["inventory"])
        assert f"- drafter {drafter}" in section, section
