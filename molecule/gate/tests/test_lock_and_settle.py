"""One run at a time, and no run left unfinished: the host's change lock and the settling of a killed run's switch.

converge.yml composes the stages as deploy.yml does (lock, settle, switch, gate, unlock). Each test runs it as a
user does, ansible-playbook in its own process group, so a test can kill the controller the way a lost laptop
or a Ctrl-C does: SIGKILL to ansible-playbook and its workers, while the host's async benchmark runs on.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
import testinfra

SCENARIO = Path(os.environ.get("MOLECULE_SCENARIO_DIRECTORY", Path(__file__).resolve().parents[1]))
PROJECT = SCENARIO.parents[1]
EPHEMERAL = Path(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", "/nonexistent"))
INSTANCE = "specgate-gate"
BASE = "/opt/specgate"
LOCK = "/run/specgate/sglang.lock"
# The bracket keeps the pattern from matching the shell testinfra runs pgrep in.
BENCH_RUNNING = "pgrep --full 'AnsiballZ_spec_benc[h]'"
PORT = 32000


@pytest.fixture(scope="module")
def host():
    return testinfra.get_host(f"podman://{INSTANCE}")


def pointer(host, name: str) -> str:
    return Path(host.file(f"{BASE}/{name}").linked_to).name


def gate_of(host, release: str) -> dict | None:
    gate = host.file(f"{BASE}/releases/{release}/gate.json")
    return json.loads(gate.content_string) if gate.exists else None


def start(knobs: dict[str, str], playbook: Path = SCENARIO / "converge.yml", **extravars) -> subprocess.Popen:
    """A playbook as a user runs it, in its own process group so a test can kill the whole controller."""
    venv_bin = Path(sys.executable).parent
    return subprocess.Popen(
        [
            str(venv_bin / "ansible-playbook"),
            "-i",
            os.environ["MOLECULE_INVENTORY_FILE"],
            str(playbook),
            "-e",
            json.dumps({"_gate_sim_knobs": knobs, **extravars}),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        env={
            **os.environ,
            "ANSIBLE_CONFIG": str(PROJECT / "ansible.cfg"),
            "ANSIBLE_FORCE_COLOR": "0",
            "MOLECULE_EPHEMERAL_DIRECTORY": str(EPHEMERAL),
            "PATH": f"{venv_bin}{os.pathsep}{os.environ.get('PATH', '')}",
        },
    )


def finish(proc: subprocess.Popen, timeout: float = 300) -> tuple[int, str]:
    out, _ = proc.communicate(timeout=timeout)
    return proc.returncode, out


def wait_for(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout} s waiting for {what}"
        time.sleep(0.2)


# A restart (stop, python start, the sim's 1 s load) keeps /health down longer than this. A late answer is an answer
# (the probe waits 5 s for one): on a busy machine the server is slow, not down.
RESTART_OUTAGE_S = 1.0


class HealthProbe:
    """Polls /health from the controller every 100 ms and keeps each stretch without a 200 (its seconds)."""

    def __init__(self) -> None:
        self.outages: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        down_since = None
        with httpx.Client(timeout=5.0, trust_env=False) as client:
            while not self._stop.is_set():
                try:
                    healthy = client.get(f"http://127.0.0.1:{PORT}/health").status_code == 200
                except httpx.HTTPError:
                    healthy = False
                now = time.monotonic()
                if healthy:
                    down_since = None
                elif down_since is None:
                    down_since = now
                    self.outages.append(0.0)
                else:
                    self.outages[-1] = now - down_since
                self._stop.wait(0.1)

    def restarts(self) -> list[float]:
        """The outages a restart made (a stop, a start and a load are seconds), not a single refused probe."""
        return [seconds for seconds in self.outages if seconds >= RESTART_OUTAGE_S]

    def __enter__(self) -> HealthProbe:
        self._thread.start()
        return self

    def __exit__(self, *_exc) -> None:
        self._stop.set()
        self._thread.join()


def test_a_second_deploy_waits_for_the_first_and_the_host_keeps_serving(host):
    knobs = {"SPECGATE_TEST_CHANGE": "two-deploys-at-once"}
    with HealthProbe() as probe:
        first = start(knobs)
        wait_for(lambda: host.file(LOCK).exists, 60, "the first deploy to take the lock")
        second = start(knobs, sglang_service_lock_poll_interval=0.5)
        first_rc, first_out = finish(first)
        second_rc, second_out = finish(second)
    assert first_rc == 0, first_out[-4000:]
    assert second_rc == 0, second_out[-4000:]
    assert "FAILED TOO" not in first_out + second_out
    # While it waited, the second said who held the lock (the first run, on this controller) and how long it waited.
    waits = [line for line in second_out.splitlines() if "waiting for the change lock, held by" in line]
    assert waits, second_out[-4000:]
    assert "(sglang_service_lock_timeout)" in waits[-1]
    # The second found the first's verdict: it ran after the first's gate, not beside it.
    # Results print as YAML, which folds a long message over lines: compare with whitespace collapsed.
    assert "is known-good and passed this gate with the same thresholds" in " ".join(second_out.split()), (
        second_out[-4000:])
    # Only the first deploy's own restart took the server away: one outage, however long a busy machine made it.
    assert len(probe.restarts()) == 1, f"outages of the server's /health (s): {probe.outages}"
    active = pointer(host, "active")
    assert pointer(host, "known-good") == active
    assert gate_of(host, active)["action"] == "promote"
    assert not host.file(LOCK).exists, "the lock outlived the runs that took it"


def _foreign_lock(host) -> None:
    """A live run's lock from another controller: nothing here can tell whether it still runs."""
    now = time.time()
    record = {
        "token": "held-by-another-controller",
        "controller": "ops-laptop",
        "user": "carol",
        "pid": 4242,
        "playbook": "Deploy SGLang with speculative decoding",
        "since_epoch": now - 300,
        "renewed_epoch": now,
        "lease_s": 3600,
    }
    assert host.run(f"mkdir -p /run/specgate && echo '{json.dumps(record)}' > {LOCK}").rc == 0


def test_a_deploy_that_cannot_get_the_lock_in_time_fails_naming_the_holder_and_changes_nothing(host):
    _foreign_lock(host)
    active, main_pid = pointer(host, "active"), host.service("sglang").systemd_properties["MainPID"]
    try:
        rc, out = finish(
            start(
                {"SPECGATE_TEST_CHANGE": "never-deployed"},
                sglang_service_lock_timeout=2,
                sglang_service_lock_poll_interval=0.5,
                sglang_service_lock_progress_interval=1,
            )
        )
    finally:
        host.run(f"rm -f {LOCK}")
    assert rc != 0
    assert "[specgate-gate] waiting for the change lock, held by carol@ops-laptop" in out, out[-4000:]
    assert "is held by carol@ops-laptop (ansible-playbook PID 4242" in out, out[-4000:]
    assert re.search(r"since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ, 3\d\d s ago", out), out[-4000:]
    assert "sglang_service_lock_timeout" in out
    assert "changed nothing" in out
    assert pointer(host, "active") == active
    assert host.service("sglang").systemd_properties["MainPID"] == main_pid


def _kill_mid_gate(host, knobs: dict[str, str]) -> str:
    """Deploy a candidate and SIGKILL the controller once the candidate serves and its benchmark runs."""
    known_good = pointer(host, "known-good")
    proc = start(knobs)
    try:
        wait_for(
            lambda: pointer(host, "active") != known_good and host.run(BENCH_RUNNING).rc == 0,
            120,
            "the candidate's gate benchmark to start",
        )
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
    candidate = pointer(host, "active")
    assert candidate != known_good
    assert gate_of(host, candidate) is None, "the killed run's gate had finished already"
    assert host.file(LOCK).exists, "a killed run cannot release its lock"
    return candidate


def test_a_controller_killed_mid_gate_leaves_a_candidate_the_next_run_gates_first(host):
    knobs = {"SPECGATE_TEST_CHANGE": "killed-mid-gate"}
    candidate = _kill_mid_gate(host, knobs)
    rc, out = finish(start(knobs))
    assert rc == 0, out[-4000:]
    # Same controller, its ansible-playbook gone: the lock is taken over at once, not after the lease.
    assert "Took over the change lock of a dead run" in out, out[-4000:]
    assert f"Release {candidate} serves but is not known-good" in out
    assert "Gating it now (spec_gate_unsettled_policy: gate)" in out
    assert pointer(host, "active") == pointer(host, "known-good") == candidate
    gate = gate_of(host, candidate)
    assert gate["action"] == "promote"
    assert gate["analysis"]["phase"] == "Successful"
    assert host.run(BENCH_RUNNING).rc == 1, "a benchmark outlived its run"
    assert not host.file(LOCK).exists


def test_with_the_rollback_policy_a_killed_runs_candidate_gives_way_to_known_good_first(host):
    known_good = pointer(host, "known-good")
    candidate = _kill_mid_gate(host, {"SPECGATE_TEST_CHANGE": "killed-then-rolled-back"})
    # The next run deploys the known-good settings: after the rollback there is nothing left to switch.
    rc, out = finish(start({"SPECGATE_TEST_CHANGE": "killed-mid-gate"}, spec_gate_unsettled_policy="rollback"))
    assert rc == 0, out[-4000:]
    assert f"Release {candidate} serves but is not known-good" in out
    assert f"Restoring known-good {known_good}" in out
    assert pointer(host, "active") == pointer(host, "known-good") == known_good
    assert gate_of(host, candidate) is None, "the rollback policy gated the candidate"
    assert host.service("sglang").is_running


def test_unlock_shows_the_holder_and_breaks_only_the_run_it_is_told(host):
    unlock = PROJECT / "playbooks" / "unlock.yml"
    _foreign_lock(host)
    try:
        rc, out = finish(start({}, playbook=unlock))
        assert rc == 0, out[-4000:]
        assert "held by carol@ops-laptop (ansible-playbook PID 4242" in out
        assert "-e sglang_service_lock_break_pid=4242" in out
        assert host.file(LOCK).exists, "showing the holder broke the lock"
        rc, out = finish(start({}, playbook=unlock, sglang_service_lock_break_pid=4243))
        assert rc != 0
        assert "nothing was broken" in out
        assert host.file(LOCK).exists
        rc, out = finish(start({}, playbook=unlock, sglang_service_lock_break_pid=4242))
        assert rc == 0, out[-4000:]
        assert not host.file(LOCK).exists
    finally:
        host.run(f"rm -f {LOCK}")
