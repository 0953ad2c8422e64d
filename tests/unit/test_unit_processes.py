"""Stop proof: a unit's PIDs found from cgroup and /proc, waited out, killed, and the port checked."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest
from ansible.module_utils.specgate.service.unit_processes import (
    SystemctlShowError,
    cgroup_pids,
    descendants,
    parse_systemctl_show,
    pid_alive,
    port_open,
    show_unit,
    stop_is_needed,
    wait_until_gone,
    was_running,
)
from fake_clock import FakeClock

pytestmark = pytest.mark.host


def test_show_unit_asks_systemctl_for_exactly_the_properties_and_parses_them():
    calls = []

    def run(argv):
        calls.append(argv)
        return 0, "ActiveState=active\nMainPID=7\n", ""

    assert show_unit(run, "sglang.service", ("ActiveState", "MainPID")) == {"ActiveState": "active", "MainPID": "7"}
    assert calls == [["systemctl", "show", "sglang.service", "-p", "ActiveState", "-p", "MainPID"]]


def test_show_unit_failure_names_the_unit_and_systemctls_words():
    with pytest.raises(SystemctlShowError, match=r"systemctl show sglang\.service failed: Failed to connect to bus"):
        show_unit(lambda argv: (1, "", "Failed to connect to bus\n"), "sglang.service", ("ActiveState",))


def test_systemctl_show_values_may_contain_equals_signs():
    props = parse_systemctl_show("MainPID=42\nControlGroup=/system.slice/sglang.service\nEnv=A=B\n")
    assert props == {"MainPID": "42", "ControlGroup": "/system.slice/sglang.service", "Env": "A=B"}


def test_cgroup_pids_include_sub_cgroups_and_any_layout(tmp_path):
    unified = tmp_path / "unified" / "system.slice" / "sglang.service"
    (unified / "sub").mkdir(parents=True)
    (unified / "cgroup.procs").write_text("10\n11\n")
    (unified / "sub" / "cgroup.procs").write_text("12\n")
    assert cgroup_pids("/system.slice/sglang.service", roots=[str(tmp_path), str(tmp_path / "unified")]) == {
        10,
        11,
        12,
    }
    assert cgroup_pids("", roots=[str(tmp_path)]) == set()


def test_descendants_follow_children_of_children():
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys, time;"
            " subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)']); time.sleep(30)",
        ]
    )
    try:
        found: set[int] = set()
        for _ in range(100):
            found = descendants([parent.pid])
            if found:
                break
                time.sleep(0.05)
        assert len(found) == 1
        assert parent.pid not in found
    finally:
        for pid in found:
            os.kill(pid, signal.SIGKILL)
        parent.kill()
        parent.wait()


def test_pid_alive_is_false_for_a_zombie_and_an_unknown_pid():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    for _ in range(200):
        with open(f"/proc/{child.pid}/stat") as handle:
            if handle.read().rsplit(")", 1)[-1].split()[0] == "Z":
                break
        time.sleep(0.01)
    assert not pid_alive(child.pid)
    child.wait()
    assert not pid_alive(child.pid)
    assert pid_alive(os.getpid())


def test_port_open_sees_a_listener_and_not_a_closed_port():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert port_open(port)
    assert not port_open(port)


def test_wait_returns_once_pids_exit_and_port_closes():
    clock = FakeClock()
    alive_until = {1: 2.0, 2: 1.0}
    result = wait_until_gone(
        [1, 2],
        timeout=30,
        port=30000,
        alive=lambda pid: clock.now < alive_until[pid],
        listening=lambda _p, _h: clock.now < 3.0,
        kill=lambda _pid, _sig: pytest.fail("nothing should be killed"),
        clock=clock,
        sleep=clock.sleep,
    )
    assert result.gone
    assert result.killed == []
    assert result.waited_s == pytest.approx(3.0)


def test_wait_kills_a_pid_that_outlives_the_timeout():
    clock = FakeClock()
    killed: list[tuple[int, int]] = []
    result = wait_until_gone(
        [7],
        timeout=5,
        kill_grace=2,
        alive=lambda _pid: not killed,
        listening=lambda _p, _h: False,
        kill=lambda pid, sig: killed.append((pid, sig)),
        clock=clock,
        sleep=clock.sleep,
    )
    assert result.gone
    assert killed == [(7, signal.SIGKILL)]
    assert result.killed == [7]
    assert clock.now == pytest.approx(5.0, abs=0.21)


def test_wait_fails_when_a_pid_survives_sigkill():
    clock = FakeClock()
    result = wait_until_gone(
        [7],
        timeout=5,
        kill_grace=2,
        alive=lambda _pid: True,
        listening=lambda _p, _h: False,
        kill=lambda _pid, _sig: None,
        clock=clock,
        sleep=clock.sleep,
    )
    assert not result.gone
    assert result.survivors == [7]
    assert clock.now == pytest.approx(7.0, abs=0.21)


def test_wait_fails_when_a_stranger_keeps_the_port():
    clock = FakeClock()
    result = wait_until_gone(
        [],
        timeout=4,
        port=31000,
        alive=lambda _pid: False,
        listening=lambda _p, _h: True,
        kill=lambda _pid, _sig: pytest.fail("no PID to kill"),
        clock=clock,
        sleep=clock.sleep,
    )
    assert not result.gone
    assert not result.port_free
    assert result.survivors == []


def test_wait_really_kills_a_process_that_ignores_sigterm():
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True);"
            " time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout.readline().strip() == "ready"
        os.kill(child.pid, signal.SIGTERM)
        result = wait_until_gone([child.pid], timeout=0.5, kill_grace=5, alive=lambda pid: child.poll() is None)
        assert result.gone
        assert result.killed == [child.pid]
        assert child.returncode == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
        child.wait()


def test_a_unit_between_a_crash_and_its_automatic_restart_is_still_stopped():
    # systemd's restart job passes the unit through inactive with a start queued: only a stop cancels it.
    restarting = {"LoadState": "loaded", "ActiveState": "inactive", "SubState": "dead"}
    assert stop_is_needed(restarting)
    assert stop_is_needed({"LoadState": "loaded", "ActiveState": "activating", "SubState": "auto-restart"})
    assert not stop_is_needed({"LoadState": "not-found", "ActiveState": "inactive", "SubState": "dead"})


def test_a_unit_waiting_to_restart_counts_as_running_and_a_dead_one_does_not():
    assert was_running({"ActiveState": "activating", "SubState": "auto-restart"})
    assert was_running({"ActiveState": "active", "SubState": "running"})
    assert not was_running({"ActiveState": "inactive", "SubState": "dead"})
    assert not was_running({"ActiveState": "failed", "SubState": "failed"})
