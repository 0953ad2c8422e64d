"""A sweep on the gate host: a config is deployed and benchmarked, a second crashes on start and is recorded with
its reason; rows land on the controller as each finishes; known-good serves again at the end.

Then a grid (Sweep v2), searched: three points run, one crashes on start, two are refused before launch (DDTREE on
an engine without the DDTree patch by specgate's settings check, a missing drafter by SGLang's own) and never
launched; the report has its plots and says which neighbours confirm each winner. A re-run of the grid's id after a
kill mid-bench launches only the interrupted point; stopped with Ctrl-C while that point serves and run again, it
restores known-good (never promoting the point) and measures it once more."""

from __future__ import annotations

import json
import os
from pathlib import Path

import ansible_runner
import pytest
import testinfra

SCENARIO = Path(os.environ.get("MOLECULE_SCENARIO_DIRECTORY", Path(__file__).resolve().parents[1]))
PROJECT = SCENARIO.parents[1]
EPHEMERAL = Path(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", "/nonexistent"))
SIM_ENV = {"SPECGATE_SIM_LOAD_SECONDS": "1", "SPECGATE_SIM_START_SECONDS": "0.3", "SPECGATE_SIM_TIME_SCALE": "0.2"}
# What a row needs and nothing more: the use cases' cells (concurrency 1 and the highest, one context) on one prompt
# set, no coding eval (the gate's tests judge correctness; a sweep's row carries what the gate measures), and no
# repeats while a point serves: these sweeps prove rows, resume and restore, not the repeats, which
# tests/integration/test_spec_sweep_repeats.py runs round by round through the role, and molecule/default's README
# sweep on its host where its points are within noise (spec_sweep_max_repeats 2 there). Here they were 10 of the
# grid's 13 benchmark runs.
BENCH = {"spec_gate_bench_sets": ["chat"], "spec_gate_accept_length_set": "chat", "spec_gate_bench_eval": False,
         "spec_gate_bench_concurrency": [1, 4], "spec_gate_bench_min_requests": 2, "spec_sweep_max_repeats": 0}


def config(name: str, block_size: int, **extra_env: str) -> dict:
    return {
        "name": name,
        "profile": str(PROJECT / "configs" / "profiles" / "dflash-bs8.yml"),
        "vars": {
            "sglang_service_block_size": block_size,
            "sglang_service_drafter_path": f"/models/kimi-k26-dflash-b{block_size}",
            "sglang_service_extra_env": {**SIM_ENV, **extra_env},
        },
    }


@pytest.fixture(scope="module")
def host():
    return testinfra.get_host("podman://specgate-gate")


def run_sweep(private: Path, reports: Path, extravars: dict, **runner_options) -> ansible_runner.Runner:
    return ansible_runner.run(
        private_data_dir=str(private),
        project_dir=str(SCENARIO),
        playbook=str(SCENARIO / "sweep.yml"),
        inventory=os.environ["MOLECULE_INVENTORY_FILE"],
        extravars={"spec_sweep_reports_dir": str(reports), **BENCH, **extravars},
        quiet=True,
        envvars={
            "ANSIBLE_CONFIG": str(PROJECT / "ansible.cfg"),
            "MOLECULE_EPHEMERAL_DIRECTORY": str(EPHEMERAL),
            "ANSIBLE_FACT_CACHING": "memory",
        },
        **runner_options,
    )


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    private = tmp_path_factory.mktemp("sweep")
    reports = private / "reports"
    run = run_sweep(private, reports, {
        "spec_sweep_id": "molecule",
        "spec_sweep_configs": [
            config("bs8", 8),
            config("crash", 8, SPECGATE_SIM_FAULT_CRASH_DURING_LOAD="1"),
        ],
    })  # fmt: skip
    return run, reports / "specgate-gate" / "sweeps" / "molecule"


def summary_block(run: ansible_runner.Runner) -> str:
    """The run's end-of-run block, its label column's padding folded to one space."""
    (block,) = [e["event_data"]["res"]["msg"] for e in run.events if e["event"] == "runner_on_ok"
                and e["event_data"].get("task") == "Summary - what this run left on the host"]  # fmt: skip
    return "\n".join(" ".join(line.split()) for line in block.splitlines())


def pointer(host, name: str) -> str:
    return Path(host.file(f"/opt/specgate/{name}").linked_to).name


def test_the_sweep_runs_every_config_and_restores_known_good(host, sweep):
    """The crash is the last launch: the restore comes after it left the unit restarting and must still succeed (the
    regression test for the restore that read systemd's NRestarts of the crash as its own failure)."""
    run, _ = sweep
    assert run.status == "successful", run.stdout.read()[-4000:]
    assert pointer(host, "active") == pointer(host, "known-good")
    assert host.service("sglang").is_running
    summary = summary_block(run)
    assert "1 of 2 config(s) measured, failed: crash" in summary, summary
    assert "(known-good)\n" in summary + "\n", summary
    assert "(unchanged)" in summary, summary


def test_each_config_has_its_row_on_the_controller_and_the_crash_its_reason(sweep):
    _, out = sweep
    names = ("bs8", "crash")
    rows = [json.loads((out / f"{name}.json").read_text()) for name in names]
    assert [r["name"] for r in rows] == ["bs8", "crash"]
    assert [r["failed"] for r in rows] == [False, True]
    assert "did not become ready" in rows[1]["reason"]
    assert rows[0]["speed_c1_short"] > 0
    assert rows[0]["tok_s_cmax"] > 0
    assert rows[0]["accept_long"] > 1


def test_the_report_names_a_winner_per_use_case_among_the_configs_that_ran(sweep):
    _, out = sweep
    report = json.loads((out / "sweep.json").read_text())
    assert {w["name"] for w in report["winners"].values()} == {"bs8"}  # never the crashed config
    assert set(report["winners"]) == {"latency", "long_context", "throughput"}
    markdown = (out / "sweep.md").read_text()
    assert "| crash |" in markdown
    assert "FAILED" in markdown
    # The crash's row stays one table row; its journal (the engine's own error) follows the table whole.
    table = markdown.split("| config |", 1)[1].split("\n\n", 1)[0].splitlines()[2:]
    assert [line.split(" | ", 1)[0] for line in table] == ["| bs8", "| crash"]
    assert "FAULT_CRASH_DURING_LOAD" in markdown.split("## Failed", 1)[1].split("\n## ", 1)[0]


def test_the_sweep_publishes_what_its_summary_reads(sweep):
    run, out = sweep
    facts = [e["event_data"]["res"].get("ansible_facts", {}) for e in run.events if e["event"] == "runner_on_ok"]
    # published twice: its start (id, dir, known-good before) before the first point, then the whole at its end
    started, published = [f["specgate_sweep"] for f in facts if "specgate_sweep" in f]
    assert started == {"id": "molecule", "dir": str(out), "known_good_before": published["known_good_before"]}
    assert published["failed"] == ["crash"]
    assert (published["configs"], published["ran"]) == (2, 1)
    assert Path(published["dir"]) == out
    assert published["restored"] is True
    assert {w["name"] for w in published["winners"].values()} == {"bs8"}
    # The configs carry inline vars on top of the profile: no -e @profile alone deploys them.
    assert published["winner_profiles"] == []


def subgrid(name: str, axes: dict, **extra) -> dict:
    block = axes["block_size"][0]
    return {"name": name, "axes": axes, **extra,
            "vars": {"sglang_service_drafter_path": f"/models/kimi-k26-dflash-b{block}",
                     "sglang_service_extra_env": SIM_ENV}}  # fmt: skip


# Five points, one launch each: dflash-bs8 and dflash-bs16 run, dflash-bs8-crash between them crashes on start (a
# preset's engine environment), bs8-b4-t4 is DDTREE, which the sim's engine (SGLang 0.5.23 without the DDTree patch)
# cannot run (specgate's settings check refuses it), nospec is the baseline without speculation, a grid point like the
# others, and dflash-bs8-missing names a drafter directory that does not exist, which only SGLang's own check (asked
# about every point in one host call before the first launch) finds.
GRID = [
    subgrid("bs8", {"algorithm": ["DFLASH"], "block_size": [8]}),
    subgrid("crash", {"algorithm": ["DFLASH"], "block_size": [8], "parallel": ["crash"]},
            parallel_presets={"crash": {"sglang_service_extra_env": {**SIM_ENV,
                                                                     "SPECGATE_SIM_FAULT_CRASH_DURING_LOAD": "1"}}}),
    subgrid("bs16", {"algorithm": ["DFLASH"], "block_size": [16]}),
    subgrid("ddtree", {"algorithm": ["DDTREE"], "block_size": [8], "budget": [4], "topk": [4]}),
    {"name": "baseline", "axes": {"algorithm": ["none"]}, "vars": {"sglang_service_extra_env": SIM_ENV}},
    subgrid("missing", {"algorithm": ["DFLASH"], "block_size": [8], "parallel": ["missing"]},
            parallel_presets={"missing": {"sglang_service_drafter_path": "/models/no-such-drafter"}}),
]  # fmt: skip
GRID_FILES = ("dflash-bs8.json", "dflash-bs8-crash.json", "dflash-bs16.json", "bs8-b4-t4.json", "nospec.json",
              "dflash-bs8-missing.json")


@pytest.fixture(scope="module")
def grid_sweep(tmp_path_factory):
    private = tmp_path_factory.mktemp("grid")
    reports = private / "reports"
    run = run_sweep(private, reports, {"spec_sweep_id": "grid", "spec_sweep_grid": GRID, "spec_sweep_search": True})
    out = reports / "specgate-gate" / "sweeps" / "grid"
    return run, out, private, reports, {name: (out / name).read_text() for name in GRID_FILES if (out / name).exists()}


def test_the_grid_sweep_runs_its_points_skips_the_rejected_one_and_restores_known_good(host, grid_sweep):
    run, out, *_ = grid_sweep
    assert run.status == "successful", run.stdout.read()[-4000:]
    assert pointer(host, "active") == pointer(host, "known-good")
    assert host.service("sglang").is_running
    rows = [json.loads((out / name).read_text()) for name in GRID_FILES]
    assert [r["status"] for r in rows] == ["ok", "failed", "ok", "rejected", "ok", "rejected"]
    assert not host.file("/opt/specgate/trial").is_symlink, "the sweep's known-good restore clears the trial mark"
    # Every row, whatever its status, carries its point's key and the sweep's conditions digest (manifest.json).
    manifest = json.loads((out / "manifest.json").read_text())
    assert {r["conditions"] for r in rows} == {manifest["conditions_digest"]}
    assert manifest["conditions"]["engine"]["renders_for"] == "0.5.23"
    assert {r["name"]: r["point"] for r in rows} == manifest["points"]
    assert "did not become ready" in rows[1]["reason"]
    assert "DDTREE needs an SGLang install carrying the DDTree pull request" in rows[3]["reason"]
    assert rows[3]["rejected_by"] == "settings"
    assert rows[3]["reason"].startswith("specgate's settings check refused it: ")
    # Judged by the host's SGLang (the sim's server-args module stands in for it), quoted, and said to be SGLang's.
    assert rows[5]["rejected_by"] == "sglang"
    assert rows[5]["reason"].startswith("SGLang rejected it: OSError: /models/no-such-drafter does not appear to have")
    assert rows[5]["release"] == ""  # never deployed
    assert rows[3]["release"] == ""  # never deployed
    for row in (rows[0], rows[2]):
        assert row["speed_c1_short"] > 0
        assert row["point"]["algorithm"] == "DFLASH"
        assert row["launch_s"] > 0
    assert rows[0]["release"] != rows[2]["release"], "each point is its own release"
    # The baseline served without speculation: the sim's /server_info says so, and it has a speed of its own.
    assert rows[4]["point"]["algorithm"] == "none"
    assert rows[4]["speed_c1_short"] > 0
    assert rows[4]["speculative_algorithm"] in (None, "", "none")


def test_the_grid_sweep_prints_its_progress_as_each_point_starts(grid_sweep):
    run, *_ = grid_sweep
    stdout = " ".join("".join(e.get("stdout", "") for e in run.events).split())  # the callback wraps long lines
    # Searched: both ends of the DFlash chain (block sizes 8 and 16) first, then the lines of one point.
    assert "sweep point 1 of at most 4: dflash-bs8; elapsed" in stdout
    assert "sweep point 2 of at most 4: dflash-bs16" in stdout
    assert "sweep point 3 of at most 4: dflash-bs8-crash" in stdout
    assert "sweep point 4 of at most 4: nospec" in stdout
    assert "ETA after the first launch" in stdout
    assert "launch(es) measured" in stdout
    assert "bs8-b4-t4; elapsed" not in stdout  # rejected: never launched
    assert "dflash-bs8-missing; elapsed" not in stdout


def test_the_grid_report_has_winners_inventory_snippets_and_plots(grid_sweep):
    _, out, *_ = grid_sweep
    report = json.loads((out / "sweep.json").read_text())
    assert set(report["winners"]) == {"latency", "long_context", "throughput"}
    for win in report["winners"].values():
        assert win["name"] in {"dflash-bs8", "dflash-bs16", "nospec"}
        algorithm = "none" if win["name"] == "nospec" else "DFLASH"
        assert f"sglang_service_algorithm: {algorithm}" in win["inventory"]
    assert report["launches"]["launched"] == 4
    # The search's verification: every use case's best has its neighbours measured, or bounded below it.
    assert report["launches"]["mode"] == "search"
    for metric in ("speed_c1_short", "accept_long", "tok_s_cmax"):
        assert any(note.startswith(f"{metric}: the best, ") and ("has every neighbour measured" in note
                                                                 or "is confirmed by its neighbours" in note)
                   for note in report["launches"]["notes"]), report["launches"]["notes"]  # fmt: skip
    markdown = (out / "sweep.md").read_text()
    assert " run(s)" in markdown, "each winner's mean with its interval and runs (repeats while launched included)"
    assert "## Skipped" in markdown
    assert "bs8-b4-t4" in markdown
    for plot in report["plots"]:
        assert (out / plot).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"]({plot})" in markdown
    assert "throughput-vs-concurrency.png" in report["plots"]


def test_a_killed_sweep_relaunches_only_its_unfinished_point_and_never_promotes_it(host, grid_sweep):
    """The grid's sweep killed mid-bench (its dflash-bs16 row says started): a re-run launches only that point. Stopped
    with Ctrl-C while that point serves, then run again with spec_gate_unsettled_policy: gate (which would gate and
    promote a deploy's unsettled candidate): the point is settled by restoring known-good, measured once more, every
    other row is left as it was, and known-good is the release it was before the sweep."""
    run, out, private, reports, first = grid_sweep
    assert run.status == "successful"  # the grid sweep above ran first and left known-good serving
    assert set(first) == set(GRID_FILES)
    known_good = pointer(host, "known-good")
    assert pointer(host, "active") == known_good
    measured = json.loads(first["dflash-bs16.json"])
    started = {"name": "dflash-bs16", "release": "", "failed": False, "status": "started",
               "point": measured["point"], "conditions": measured["conditions"]}  # fmt: skip
    (out / "dflash-bs16.json").write_text(json.dumps(started))

    def point_serves() -> bool:
        """Cancel once the point is the active release, marked a trial, its row still started."""
        trial = host.file("/opt/specgate/trial")
        return (trial.is_symlink and trial.linked_to == host.file("/opt/specgate/active").linked_to
                and pointer(host, "active") != known_good
                and json.loads((out / "dflash-bs16.json").read_text() or "{}").get("status") == "started")  # fmt: skip

    (private / "cut").mkdir()
    cut = run_sweep(private / "cut", reports, {"spec_sweep_id": "grid", "spec_sweep_grid": GRID,
                                               "spec_sweep_search": True}, cancel_callback=point_serves)  # fmt: skip
    assert cut.status == "canceled", cut.stdout.read()[-3000:]
    stdout = " ".join("".join(e.get("stdout", "") for e in cut.events).split())  # the callback wraps long lines
    assert "sweep point 4 of at most 4: dflash-bs16" in stdout  # three of the four launchable points are finished
    assert stdout.count("sweep point ") == 1, "only the interrupted point is launched again"
    trial = pointer(host, "active")
    assert trial != known_good
    assert pointer(host, "trial") == trial
    assert pointer(host, "known-good") == known_good

    (private / "again").mkdir()
    again = run_sweep(private / "again", reports, {"spec_sweep_id": "grid", "spec_sweep_grid": GRID,
                                                   "spec_sweep_search": True,
                                                   "spec_gate_unsettled_policy": "gate"})  # fmt: skip
    assert again.status == "successful", again.stdout.read()[-4000:]
    stdout = " ".join("".join(e.get("stdout", "") for e in again.events).split())
    assert f"Release {trial} serves as a sweep's trial" in stdout
    assert f"Restoring known-good {known_good}" in stdout
    assert "Gate the release the earlier run left serving" not in {e["event_data"].get("task") for e in again.events
                                                                   if e["event"] == "runner_on_ok"}  # fmt: skip
    assert pointer(host, "known-good") == known_good, "the sweep's point was promoted"
    assert pointer(host, "active") == known_good
    assert not host.file("/opt/specgate/trial").is_symlink
    assert stdout.count("sweep point ") == 1, "the interrupted point is measured again, once"
    assert "sweep point 4 of at most 4: dflash-bs16" in stdout
    for name in GRID_FILES:
        if name != "dflash-bs16.json":
            assert (out / name).read_text() == first[name], f"{name} was rewritten"
    redone = json.loads((out / "dflash-bs16.json").read_text())
    assert redone["status"] == "ok"
    assert redone["speed_c1_short"] > 0
    summary = summary_block(again)
    assert f"known-good {known_good} (unchanged)" in summary, summary
    assert f"serving {known_good} (known-good)" in summary, summary


def test_a_sweep_that_measured_no_point_fails_saying_why_and_known_good_serves(host, grid_sweep, tmp_path):
    """Every point refused before launch (DDTREE without the patch, a drafter that is not there): the run fails
    naming the points and the first reason, after known-good is back and the rows and report are written."""
    assert grid_sweep[0].status == "successful"
    known_good = pointer(host, "known-good")
    grid = [GRID[3], GRID[5]]  # ddtree (specgate's settings check refuses it) and missing (SGLang's check does)
    reports = tmp_path / "reports"
    run = run_sweep(tmp_path, reports, {"spec_sweep_id": "nothing", "spec_sweep_grid": grid})
    assert run.status == "failed"
    # (the DDTREE point's refusal by the settings check is a rescued failure before it: the sweep goes on)
    failed = [e["event_data"] for e in run.events if e["event"] == "runner_on_failed"]
    last = "Fail the sweep when it measured none of its points (every one refused before launch or failed)"
    # The sweep's own failure, then the play's rescue pointing at it (the reason printed once, by that task)
    assert [f["task"] for f in failed[-2:]] == [last, "Fail the host, pointing at the task that printed the reason"]
    msg = " ".join(failed[-2]["res"]["msg"].split())
    assert "The sweep nothing measured none of its 2 points: 2 refused before launch (bs8-b4-t4, dflash-bs8-missing)" \
        in msg
    assert "known-good serves again" in msg
    assert "sweep point " not in "".join(e.get("stdout", "") for e in run.events)  # nothing was launched
    assert pointer(host, "active") == pointer(host, "known-good") == known_good
    assert (reports / "specgate-gate" / "sweeps" / "nothing" / "sweep.md").exists()
    assert msg.count("The sweep nothing measured none") == 1
    summary = summary_block(run)
    assert summary.startswith("specgate-gate: sweep nothing: 0 of 2 config(s) measured"), summary
    assert f"serving {known_good} (known-good)" in summary
    assert f"known-good {known_good} (unchanged)" in summary
    assert "reason The sweep nothing measured none of its 2 points" in summary
    every_message = " ".join(str(e["event_data"].get("res", {}).get("msg", "")) for e in run.events
                             if e["event"] in ("runner_on_ok", "runner_on_failed"))  # fmt: skip
    assert every_message.count("Fix the points (spec_sweep_grid or spec_sweep_configs)") == 1, "one paragraph"

