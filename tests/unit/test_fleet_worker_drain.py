"""Draining a worker out of the router: its own /v1/loads (SGLang 0.5.23) until nothing runs or waits, summed over
its DP ranks, bounded by the drain timeout; what cannot get better by waiting fails at once."""

from __future__ import annotations

import json

import pytest
import sglang_worker_drain as module  # library/sglang_worker_drain.py (tests/conftest.py puts library/ on sys.path)
from ansible.module_utils.specgate.fleet.router_client import FleetError, HttpAnswer
from ansible.module_utils.specgate.fleet.worker_drain import parse_loads, wait_worker_idle
from ansible.module_utils.testing import patch_module_args
from fake_clock import FakeClock
from fake_router import loads_body, serve

pytestmark = pytest.mark.host

WORKER = "http://10.0.0.11:30000"


class Worker:
    """A worker whose queue follows a script, one reading per poll (the last one repeats)."""

    def __init__(self, *answers: HttpAnswer) -> None:
        self.answers = list(answers)
        self.requests: list[tuple[str, dict]] = []

    def opener(self, method, url, body, headers, timeout):
        self.requests.append((url, dict(headers)))
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def loads(*ranks: tuple[int, int]) -> HttpAnswer:
    return HttpAnswer(200, json.dumps(loads_body(*ranks)).encode())


def test_waits_until_nothing_runs_or_waits_on_any_dp_rank():
    worker = Worker(loads((3, 1), (2, 0)), loads((3, 1), (2, 0)), loads((1, 0), (0, 0)), loads((0, 0), (0, 0)))
    clock = FakeClock()
    result = wait_worker_idle(WORKER, 60, interval=2, clock=clock, sleep=clock.sleep, opener=worker.opener)
    assert result.idle
    assert result.polls == 4
    assert result.waited_s == pytest.approx(6.0)
    # each change of the queue once, not every poll
    assert result.observed == [{"t": 0.0, "running": 5, "waiting": 1}, {"t": 4.0, "running": 1, "waiting": 0},
                               {"t": 6.0, "running": 0, "waiting": 0}]
    assert result.in_flight_at_start == 6  # what the drain waited on, reported at each leave
    assert result.as_dict()["in_flight_at_start"] == 6
    assert worker.requests[0][0] == WORKER + "/v1/loads?include=core"


def test_an_idle_worker_is_drained_at_the_first_reading():
    clock = FakeClock()
    result = wait_worker_idle(WORKER, 60, clock=clock, sleep=clock.sleep, opener=Worker(loads((0, 0))).opener)
    assert result.idle
    assert result.polls == 1
    assert clock.sleeps == []


def test_a_worker_still_busy_at_the_drain_timeout_is_not_idle_and_says_what_it_still_has():
    clock = FakeClock()
    result = wait_worker_idle(WORKER, 10, interval=3, clock=clock, sleep=clock.sleep,
                              opener=Worker(loads((2, 4))).opener)
    assert not result.idle
    assert result.last == {"running": 2, "waiting": 4}
    assert "2 running and 4 waiting request(s)" in result.reason
    assert "sglang_router_drain_timeout" in result.reason
    assert clock.now == pytest.approx(10.0)


def test_a_worker_on_which_nothing_listens_counts_as_drained():
    refused = HttpAnswer(None, b"", "ConnectionRefusedError: [Errno 111] Connection refused")
    clock = FakeClock()
    result = wait_worker_idle(WORKER, 60, clock=clock, sleep=clock.sleep, opener=Worker(refused).opener)
    assert result.idle
    assert result.listening is False
    assert "nothing listens" in result.summary
    assert result.as_dict()["reason"] == result.summary
    assert result.in_flight_at_start == 0  # no process, no request in flight


def test_errors_and_odd_answers_are_retried_until_a_reading_comes():
    worker = Worker(HttpAnswer(None, b"", "TimeoutError: timed out"), HttpAnswer(503, b"busy"),
                    HttpAnswer(200, b"not json"), loads((0, 0)))
    clock = FakeClock()
    result = wait_worker_idle(WORKER, 60, interval=1, clock=clock, sleep=clock.sleep, opener=worker.opener)
    assert result.idle
    assert result.errors == 3


def test_no_reading_at_all_until_the_timeout_says_what_the_worker_last_answered():
    clock = FakeClock()
    result = wait_worker_idle(WORKER, 3, interval=1, clock=clock, sleep=clock.sleep,
                              opener=Worker(HttpAnswer(503, b"loading")).opener)
    assert not result.idle
    assert "gave no reading" in result.reason
    assert "HTTP 503 loading" in result.reason


def test_a_worker_without_v1_loads_fails_at_once():
    clock = FakeClock()
    with pytest.raises(FleetError, match=r"does not serve /v1/loads \(HTTP 404\)"):
        wait_worker_idle(WORKER, 600, clock=clock, sleep=clock.sleep,
                         opener=Worker(HttpAnswer(404, b"404: Not Found")).opener)
    assert clock.now == 0


def test_a_worker_that_wants_its_key_fails_at_once_naming_the_variable():
    with pytest.raises(FleetError, match="sglang_router_worker_api_key"):
        wait_worker_idle(WORKER, 600, opener=Worker(HttpAnswer(401, b"")).opener)


def test_the_key_is_sent_as_bearer():
    worker = Worker(loads((0, 0)))
    wait_worker_idle(WORKER, 60, api_key="engine-key", opener=worker.opener)
    assert worker.requests[0][1]["Authorization"] == "Bearer engine-key"


def test_a_body_that_is_not_v1_loads_gives_no_reading():
    assert parse_loads({"loads": [{"num_running_reqs": 1}, {"num_waiting_reqs": 2}]}).busy == 3
    assert parse_loads({"status": "ok"}) is None
    assert parse_loads({"loads": ["x"]}) is None
    assert parse_loads(None) is None


# The module over a real loopback connection (urllib), as Ansible runs it.


def run_module(capsys, args: dict) -> dict:
    with patch_module_args(args), pytest.raises(SystemExit):
        module.main()
    return json.loads(capsys.readouterr().out)


def test_the_module_waits_over_http_and_fails_with_the_last_reading(capsys):
    queue = [(1, 1), (0, 0)]

    def handle(method, path, payload, headers):
        assert path == "/v1/loads?include=core"
        return loads(queue.pop(0) if len(queue) > 1 else queue[0])

    with serve(handle) as url:
        drained = run_module(capsys, {"url": url, "timeout": 10, "poll_interval": 0.01})
        queue[:] = [(2, 0)]
        stuck = run_module(capsys, {"url": url, "timeout": 0.05, "poll_interval": 0.01})
        checked = run_module(capsys, {"url": url, "_ansible_check_mode": True})
    assert drained["changed"] is False
    assert drained["idle"] is True
    assert drained["observed"][0]["running"] == 1
    assert stuck["failed"] is True
    assert "did not drain" in stuck["msg"]
    assert stuck["last"] == {"running": 2, "waiting": 0}
    assert checked["idle"] is False
    assert checked["polls"] == 1
    assert checked["last"] == {"running": 2, "waiting": 0}
