"""specgate_follow_job through a real async job on the controller: the follow sees the job's end as it happens, not
at its next round (each round waits on the host, specgate_job_wait), prints the job's progress line, returns the
job's own result, and a job that fails or outlives the timeout fails the task saying so."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path

import ansible_runner
import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]

# The job writes a progress report, sleeps, and prints its end time last.
JOB = ("sleep 1; printf '{{\"line\": \"half way\"}}' > {report}; sleep {seconds}; "
       "python3 -c 'import time; print(time.time())'; exit {rc}")


def _follow(tmp_path: Path, *, seconds: float = 1, rc: int = 0, timeout: float = 120,
            follow_python: str = sys.executable, action: str = "specgate_follow_job",
            action_args: dict | None = None) -> tuple[ansible_runner.Runner, dict]:
    report = tmp_path / "progress.json"
    args = action_args or {"poll_interval": 30, "timeout": timeout, "label": "sleeper"}
    play = [{
        "hosts": "localhost", "gather_facts": False,
        "tasks": [
            {"name": "Start the job", "ansible.builtin.shell": JOB.format(report=report, seconds=seconds, rc=rc),
             "async": 120, "poll": 0, "changed_when": False, "register": "job"},
            {"name": "Follow the job", action: {"jid": "{{ job.ansible_job_id }}", "progress_file": str(report),
                                                **args},
             "vars": {"ansible_python_interpreter": follow_python}},
        ],
    }]  # fmt: skip
    private = tmp_path / "runner"
    (private / "project").mkdir(parents=True)
    (private / "project" / "play.yml").write_text(json.dumps(play))
    run = ansible_runner.run(
        private_data_dir=str(private), playbook="play.yml", quiet=True,
        inventory=f"localhost ansible_connection=local ansible_python_interpreter={sys.executable}",
        envvars={"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_FACT_CACHING": "memory"},
    )  # fmt: skip
    (followed,) = [e for e in run.events if e["event"] in ("runner_on_ok", "runner_on_failed")
                   and e["event_data"]["task"] == "Follow the job"]  # fmt: skip
    return run, followed


def test_the_follow_ends_as_the_job_does_with_its_result_and_its_progress_line(tmp_path):
    # Rounds of 0.5, 1, 2, 4, 8, 16 s: a follow that slept them on the controller saw this job's end about 13 s late.
    run, followed = _follow(tmp_path, seconds=19)
    assert run.status == "successful", run.stdout.read()[-3000:]
    res = followed["event_data"]["res"]
    job_end = float(res["stdout"])  # the job's own result is the task's
    followed_end = datetime.fromisoformat(followed["event_data"]["end"]).timestamp()
    # A round that waits on the host sees it at its next look (0.2 s); the rest is async_status, on a busy machine.
    assert followed_end - job_end < 6.0, (followed_end - job_end, res)
    assert res["progress_line"] == "half way"
    assert res["finished"] == 1


def test_a_job_that_fails_fails_the_follow_with_its_result(tmp_path):
    run, followed = _follow(tmp_path, rc=3)
    assert run.status == "failed"
    assert followed["event"] == "runner_on_failed"
    assert followed["event_data"]["res"]["rc"] == 3


def test_a_job_that_outlives_the_timeout_fails_the_follow_naming_it_and_its_last_line(tmp_path):
    run, followed = _follow(tmp_path, seconds=10, timeout=3)
    assert run.status == "failed"
    msg = followed["event_data"]["res"]["msg"]
    assert "sleeper did not end within 3 s" in msg
    assert "its last progress: half way" in msg


def test_a_round_that_cannot_run_on_the_host_fails_the_follow_naming_the_job_and_ansible_s_reason(tmp_path):
    run, followed = _follow(tmp_path, follow_python="/nonexistent/python3")
    assert run.status == "failed"
    msg = followed["event_data"]["res"]["msg"]
    assert msg.startswith("following sleeper (job ")
    assert "on localhost failed: " in msg
    assert "/nonexistent/python3" in msg


def _lead(tmp_path: Path, **kwargs) -> tuple[ansible_runner.Runner, dict]:
    """Rank 0 of sglang_service_follow_nodes, a node group of one, following its start job."""
    return _follow(tmp_path, action="sglang_service_follow_nodes",
                   action_args={"group": "g", "restart_id": "r1", "rank": 0, "signal_base": str(tmp_path / "signals"),
                                "poll_interval": 30, "label": "sleeper"}, **kwargs)


def test_rank_0_is_ready_as_its_start_job_ends_and_returns_the_job_s_result(tmp_path):
    run, followed = _lead(tmp_path, seconds=4)
    assert run.status == "successful", run.stdout.read()[-3000:]
    res = followed["event_data"]["res"]
    assert res["outcome"] == "ready", res
    followed_end = datetime.fromisoformat(followed["event_data"]["end"]).timestamp()
    assert followed_end - float(res["start"]["stdout"]) < 6.0, res
    assert "invocation" not in res["start"]


def test_a_round_that_cannot_run_fails_rank_0_naming_the_job_and_tells_the_other_nodes(tmp_path):
    # The task itself never fails (the role judges the group); the outcome says failed, not ready.
    _, followed = _lead(tmp_path, follow_python="/nonexistent/python3")
    res = followed["event_data"]["res"]
    assert res["outcome"] == "failed", res
    assert res["message"].startswith("following sleeper (job ")
    assert "on localhost failed: " in res["message"]
    assert "/nonexistent/python3" in res["message"]
    (signal,) = [json.loads(path.read_text()) for path in Path(res["signal_dir"]).glob("rank*.json")]
    assert signal["outcome"] == "failed"
    assert signal["message"] == res["message"]
