"""Readiness after a start: /health polling that survives load-time errors, fails fast, proves identity."""

from __future__ import annotations

import http.server
import json
import socket

import pytest
from ansible.module_utils.specgate.service.readiness import (
    Probe,
    UnitState,
    fetch_server_info,
    identity_mismatches,
    probe_health,
    redact,
    unit_gave_up,
    wait_ready,
)
from fake_clock import FakeClock
from loopback_engine import serving

pytestmark = pytest.mark.host

RUNNING = UnitState(active_state="active", sub_state="running", n_restarts=0, main_pid=4321)


def test_refused_connections_and_503_while_loading_are_retried_until_200():
    clock = FakeClock()
    probes = iter(
        [Probe(None, "ConnectionRefusedError"), Probe(None, "ConnectionResetError"), Probe(503), Probe(503), Probe(200)]
    )
    result = wait_ready(lambda: next(probes), lambda: RUNNING, timeout=60, interval=1, clock=clock, sleep=clock.sleep)
    assert result.ready
    assert result.refused == 2
    assert result.loading == 2
    assert result.main_pid == 4321
    assert clock.now == pytest.approx(4.0)


def test_a_failed_unit_ends_the_wait_at_once():
    clock = FakeClock()
    states = iter([RUNNING, UnitState("failed", "failed", 0, 0)])
    result = wait_ready(
        lambda: Probe(None, "ConnectionRefusedError"), lambda: next(states), timeout=600, clock=clock, sleep=clock.sleep
    )
    assert not result.ready
    assert "failed" in result.reason
    assert clock.now == pytest.approx(1.0)


def test_a_systemd_auto_restart_counts_as_a_failed_start():
    state = UnitState("activating", "auto-restart", 1, 0)
    assert "restarted" in unit_gave_up(state, baseline_restarts=0)
    assert unit_gave_up(RUNNING, baseline_restarts=0) is None


def test_a_restart_count_the_unit_carried_into_the_start_is_not_a_restart_of_the_engine_just_started():
    """A rollback starts known-good on a unit stopped while it waited to auto-restart the crashed candidate: systemd
    kept NRestarts at 1. Counted from right after the start (sglang_service_start's baseline), only a new restart
    is the new engine's."""
    carried = UnitState("active", "running", 1, 4321)
    clock = FakeClock()
    result = wait_ready(lambda: Probe(200), lambda: carried, timeout=60, baseline_restarts=1, clock=clock,
                        sleep=clock.sleep)
    assert result.ready
    assert "restarted it (1 restart(s))" in unit_gave_up(UnitState("activating", "auto-restart", 2, 0), 1)


def test_a_confirm_only_wait_counts_restarts_from_the_count_the_unit_carries_not_from_zero():
    """Issue #17: the sweep's last point crashed on start, the service role's rescue brought known-good back on a unit
    that kept the crashed candidate's NRestarts (1), then the sweep's restore only confirmed what serves (no start,
    no baseline read after one). Counted from 0 that read the healthy known-good release as restarted; counted from
    the unit's own count as the wait first reads it, it is ready, and a restart during the wait still ends it."""
    carried = UnitState("active", "running", 1, 4321)
    clock = FakeClock()
    result = wait_ready(lambda: Probe(200), lambda: carried, timeout=60, clock=clock, sleep=clock.sleep)
    assert result.ready, result.reason

    states = iter([carried, UnitState("activating", "auto-restart", 2, 0)])
    result = wait_ready(lambda: Probe(None, "ConnectionRefusedError"), lambda: next(states), timeout=60, clock=clock,
                        sleep=clock.sleep)  # fmt: skip
    assert not result.ready
    assert result.reason == "the engine exited and systemd restarted it (1 restart(s))"


def test_a_healthy_answer_from_a_unit_that_just_died_is_not_ready():
    clock = FakeClock()
    states = iter([RUNNING, UnitState("failed", "failed", 0, 0)])
    result = wait_ready(lambda: Probe(200), lambda: next(states), timeout=60, clock=clock, sleep=clock.sleep)
    assert not result.ready
    assert "failed" in result.reason


def test_the_wait_is_bounded_by_the_load_timeout_and_says_what_it_last_saw():
    clock = FakeClock()
    result = wait_ready(lambda: Probe(503), lambda: RUNNING, timeout=10, interval=3, clock=clock, sleep=clock.sleep)
    assert not result.ready
    assert "not healthy after 10 s" in result.reason
    assert "HTTP 503" in result.reason
    assert clock.now == pytest.approx(10.0)


def test_identity_compares_flag_spellings_paths_numbers_and_case():
    expected = {
        "model-path": "/models/target/",
        "speculative-algorithm": "dflash",
        "speculative-num-draft-tokens": 16,
        "mem_fraction_static": "0.85",
    }
    info = {
        "model_path": "/models/target",
        "speculative_algorithm": "DFLASH",
        "speculative_num_draft_tokens": 16,
        "mem_fraction_static": 0.85,
    }
    assert identity_mismatches(expected, info) == []


def test_identity_names_each_setting_the_old_server_still_runs():
    expected = {"speculative-num-draft-tokens": 16, "speculative-ddtree-budget": 32, "tp-size": 8}
    info = {"speculative_num_draft_tokens": 8, "tp_size": 8}
    mismatches = identity_mismatches(expected, info)
    described = [m.describe() for m in mismatches]
    assert described == [
        "speculative_num_draft_tokens: expected 16, server runs 8",
        "speculative_ddtree_budget: not reported by /server_info (expected 32)",
    ]
    assert identity_mismatches(expected, info, ignore=frozenset({"speculative_ddtree_budget"}))[0].key == (
        "speculative_num_draft_tokens"
    )


def test_booleans_are_not_confused_with_numbers():
    assert identity_mismatches({"enable-metrics": True}, {"enable_metrics": 1.0}) != []


def test_redact_blanks_every_secret_occurrence():
    assert redact("api_key='k3y' again k3y hf_T", ["k3y", "hf_T", ""]) == "api_key='********' again ******** ********"


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/health":
            self.send_response(503)
            self.end_headers()
            return
        if self.path == "/server_info":
            if self.headers.get("Authorization") != "Bearer s3cret":
                self.send_response(401)
                self.end_headers()
                return
            body = json.dumps({"model_path": "/models/t", "api_key": "s3cret"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

    def log_message(self, *_args):
        return


@pytest.fixture
def server():
    with serving(_Handler) as url:
        yield url


def test_probe_reports_status_codes_and_connection_errors(server):
    assert probe_health(server + "/health").status == 503
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    refused = probe_health(f"http://127.0.0.1:{port}/health", timeout=1)
    assert refused.status is None
    assert "Refused" in refused.error


def test_server_info_is_read_with_the_bearer_key(server):
    info, error = fetch_server_info(server, "s3cret")
    assert error is None
    assert info["model_path"] == "/models/t"
    info, error = fetch_server_info(server, None)
    assert info is None
    assert error == "/server_info answered HTTP 401"


class _Serving(http.server.BaseHTTPRequestHandler):
    """The known-good release serving: /health 200, /server_info its identity."""

    def do_GET(self):
        body = b"{}" if self.path == "/health" else json.dumps({"model_path": "/models/t"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args):
        return


def test_the_module_confirms_a_serving_unit_that_carries_a_crashed_candidates_restart_count(monkeypatch, capsys):
    """sglang_service_start with start: false (rollback.yml's "Confirm the known-good release serves", the sweep's
    restore after a last point that crashed on start) on a unit whose NRestarts is 1 from the crashed candidate: the
    running known-good release is confirmed, not failed as "systemd restarted it"."""
    import sglang_service_start as start_module  # library/ (tests/conftest.py puts it on sys.path)
    from ansible.module_utils.basic import AnsibleModule
    from ansible.module_utils.testing import patch_module_args

    calls = []

    def run_command(self, argv, *args, **kwargs):
        calls.append(list(argv))
        if argv[:2] == ["systemctl", "show"]:
            return 0, "ActiveState=active\nSubState=running\nNRestarts=1\nMainPID=4321\n", ""
        return 0, "", ""

    monkeypatch.setattr(AnsibleModule, "run_command", run_command)
    with serving(_Serving) as url:
        args = {"unit": "sglang.service", "url": url, "start": False, "load_timeout": 5, "poll_interval": 0.1,
                "expected": {"model-path": "/models/t"}}  # fmt: skip
        with patch_module_args(args), pytest.raises(SystemExit):
            start_module.main()
    result = json.loads(capsys.readouterr().out)
    assert not result.get("failed"), result.get("msg")
    assert result["ready"]["ready"]
    assert not any(argv[:2] == ["systemctl", "start"] for argv in calls)
