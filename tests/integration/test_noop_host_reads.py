"""A no-op re-run asks the host each question once (issue 18): the change lock's renewals do not read the holder's
record again, and what the host serves now is read from the layout record in one read, not a look then a read.
sglang_service's entry points on localhost through ansible-runner."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from integration.preflight_runner import RoleRun, run_entries

pytestmark = pytest.mark.slow

READ_LOCK = "Read the lock's record, to tell a dead run of this controller from a live one"
TAKE_LOCK = "Wait for the host's change lock, then take it (sglang_service_lock_timeout)"
RENEW_LOCK = "Renew the change lock this run holds (sglang_service_lock_lease)"


def play(tmp_path: Path, entries: list[str], extravars: dict) -> RoleRun:
    """One play on localhost running sglang_service's entry points in order."""
    return run_entries(tmp_path, "sglang_service", entries, extravars)


def outcomes(run: RoleRun, task: str) -> list[str]:
    """ok / skipped / failed, in order, for each time the task came up."""
    return [e["event"].removeprefix("runner_on_") for e in run.events
            if e.get("event") in ("runner_on_ok", "runner_on_skipped", "runner_on_failed")
            and e["event_data"].get("task") == task]


def test_a_renewal_reads_no_record_and_a_lock_taken_after_the_release_reads_it_again(tmp_path):
    lock = tmp_path / "run" / "sglang.lock"
    lock.parent.mkdir()
    run = play(tmp_path, ["lock", "lock", "lock", "unlock", "lock", "unlock"],
               {"_sglang_service_lock_path": str(lock), "sglang_service_lock_timeout": 5})
    assert run.status == "successful", run.failed_tasks()
    # Taken (record read), renewed twice (ours: one task, nothing to read), released, taken anew (read again).
    assert outcomes(run, READ_LOCK) == ["ok", "ok"]
    assert outcomes(run, RENEW_LOCK) == ["skipped", "ok", "ok", "skipped"]
    results = [(e["event_data"]["task"], e["event_data"]["res"]["renewed"]) for e in run.events
               if e.get("event") == "runner_on_ok" and e["event_data"].get("task") in (TAKE_LOCK, RENEW_LOCK)]
    assert results == [(TAKE_LOCK, False), (RENEW_LOCK, True), (RENEW_LOCK, True), (TAKE_LOCK, False)]
    assert not lock.exists()


def test_a_renewal_still_waits_for_a_live_holder_that_is_not_this_run(tmp_path):
    """The record is skipped only while this run holds the lock: a run that does not waits, names the holder, fails."""
    lock = tmp_path / "run" / "sglang.lock"
    lock.parent.mkdir()
    lock.write_text(json.dumps({"token": "someone-else", "controller": "elsewhere", "user": "ops", "pid": 1,
                                "playbook": "Deploy", "since_epoch": time.time(), "renewed_epoch": time.time(),
                                "lease_s": 14400}))
    run = play(tmp_path, ["lock"], {"_sglang_service_lock_path": str(lock), "sglang_service_lock_timeout": 1,
                                    "sglang_service_lock_poll_interval": 0.2})
    assert run.status == "failed"
    assert outcomes(run, READ_LOCK) == ["ok"]
    ((task, res),) = run.failed_tasks()
    # Another run's lock is waited for in the background, the wait followed (and its holder named) to the timeout
    assert task.startswith("Follow the wait, naming the holder"), (task, res)
    assert "elsewhere" in res["msg"], res["msg"]
    printed = " ".join(e.get("stdout", "") for e in run.events)
    assert "[localhost] waiting for the change lock, held by ops@elsewhere" in printed, printed[-2000:]


def _layout(tmp_path: Path) -> dict:
    base = tmp_path / "opt"
    (base / "releases" / "r1").mkdir(parents=True)
    (base / "active").symlink_to(base / "releases" / "r1")
    (base / "known-good").symlink_to(base / "releases" / "r1")
    return {"base_dir": str(base), "python": sys.executable, "user": "root", "group": "root",
            "cache_dir": str(tmp_path / "cache"), "sglang_version": "0.5.23", "cuda_env_file": "", "cuda_home": ""}


def test_what_serves_now_is_read_from_the_layout_record_in_one_read(tmp_path):
    state = tmp_path / "facts.d" / "specgate_service.fact"
    state.parent.mkdir()
    state.write_text(json.dumps(_layout(tmp_path)))
    run = play(tmp_path, ["current"], {"sglang_service_state_file": str(state),
                                       "sglang_service_unit_name": "specgate-noop-test-absent"})
    reads = [e["event_data"]["task"] for e in run.events if e.get("event") == "runner_on_ok"
             and e["event_data"].get("task_action") in ("ansible.builtin.slurp", "ansible.builtin.stat")]
    assert reads == ["Read the service layout a deploy recorded, if one did"]
    (layout,) = [e["event_data"]["res"]["ansible_facts"]["_sglang_service_layout"] for e in run.events
                 if e.get("event") == "runner_on_ok"
                 and e["event_data"].get("task") == "Take the host layout from the recorded state"]
    assert layout["base_dir"] == str(tmp_path / "opt")
    assert layout["sglang_version"] == "0.5.23"
    # The pointers' module asks systemd next, which this controller does not run (molecule/gate does): only reached.
    if run.status != "successful":
        ((task, res),) = run.failed_tasks()
        assert task == "Read which releases the active and known-good pointers name, and whether the service runs"
        assert "systemctl" in res["msg"], res["msg"]


def test_a_host_never_deployed_to_publishes_nothing_and_a_promote_there_is_refused_naming_the_record(tmp_path):
    missing = tmp_path / "facts.d" / "specgate_service.fact"
    run = play(tmp_path, ["current"], {"sglang_service_state_file": str(missing)})
    assert run.status == "successful", run.failed_tasks()
    assert not [e for e in run.events if "specgate_release" in
                e.get("event_data", {}).get("res", {}).get("ansible_facts", {})]
    refused = play(tmp_path / "promote", ["promote"], {"sglang_service_state_file": str(missing)})
    assert refused.status == "failed"
    ((task, res),) = refused.failed_tasks()
    assert task == "Refuse to act on a host where sglang_service never deployed", (task, res)
    assert f"{missing} does not exist on localhost" in res["msg"]
