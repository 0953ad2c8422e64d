"""The bake: live acceptance from the per-request counters over each window (never a stale gauge), errors counted,
no traffic no verdict, and a measurement error that is not a failed metric."""

from __future__ import annotations

import json

import fleet_bake as module  # library/fleet_bake.py (tests/conftest.py puts library/ on sys.path)
import pytest
from ansible.module_utils.specgate.fleet.bake import (
    FAILED,
    INCONCLUSIVE,
    PASSED,
    BakeError,
    BakeSettings,
    Counters,
    read_counters,
    watch,
    window_accept_length,
)
from ansible.module_utils.testing import patch_module_args
from fake_clock import FakeClock

pytestmark = pytest.mark.host


def metrics_text(tokens: float, verify: float, requests: float, *, aborted: float = 0, http_5xx: float = 0,
                 with_tokens: bool = True) -> str:
    """The families as SGLang 0.5.23 exposes them (MultiProcessCollector: # HELP/# TYPE, _total samples)."""
    lines = []
    if with_tokens:
        lines += [
            "# HELP sglang:generation_tokens_total Number of generation tokens processed.",
            "# TYPE sglang:generation_tokens_total counter",
            f'sglang:generation_tokens_total{{is_streaming="false",model_name="m"}} {tokens * 0.75}',
            f'sglang:generation_tokens_total{{is_streaming="true",model_name="m"}} {tokens * 0.25}',
        ]
    lines += [
        "# HELP sglang:spec_verify_calls_total Number of speculative decoding verification calls.",
        "# TYPE sglang:spec_verify_calls_total counter",
        f'sglang:spec_verify_calls_total{{model_name="m"}} {verify}',
        "# HELP sglang:num_requests_total Number of requests processed.",
        "# TYPE sglang:num_requests_total counter",
        f'sglang:num_requests_total{{is_streaming="false",model_name="m"}} {requests}',
        "# HELP sglang:num_aborted_requests_total Number of requests aborted.",
        "# TYPE sglang:num_aborted_requests_total counter",
        f'sglang:num_aborted_requests_total{{model_name="m"}} {aborted}',
        "# HELP sglang:http_responses_total Total number of HTTP responses by endpoint and status code",
        "# TYPE sglang:http_responses_total counter",
        f'sglang:http_responses_total{{endpoint="/generate",method="POST",status_code="200"}} {requests}',
        f'sglang:http_responses_total{{endpoint="/generate",method="POST",status_code="503"}} {http_5xx}',
        "# HELP sglang:spec_accept_length Mean acceptance length of speculative decoding.",
        "# TYPE sglang:spec_accept_length gauge",
        'sglang:spec_accept_length{model_name="m"} 5.0',  # stale: the bake never reads it
    ]
    return "\n".join(lines) + "\n"


class Replica:
    """A replica's counters advancing per scrape: each window adds `requests` requests of `tokens_each` tokens at
    `accept` tokens per verify step."""

    def __init__(self, windows: list[tuple[int, float]], tokens_each: int = 64) -> None:
        self.windows = list(windows)
        self.tokens = self.verify = self.requests = 0.0
        self.tokens_each = tokens_each
        self.aborted = 0.0
        self.first = True

    def scrape(self) -> str:
        if not self.first and self.windows:
            requests, accept = self.windows.pop(0)
            self.requests += requests
            self.tokens += requests * self.tokens_each
            self.verify += requests * self.tokens_each / accept
        self.first = False
        return metrics_text(self.tokens, self.verify, self.requests, aborted=self.aborted)


SETTINGS = BakeSettings(seconds=50, interval=5, min_accept_length=2.0, max_errors=0, min_requests=10)


def run(replica: Replica, settings: BakeSettings = SETTINGS):
    clock = FakeClock()
    return watch(replica.scrape, settings, clock=clock, sleep=clock.sleep)


def test_counters_sum_every_label_set_and_only_5xx_answers() -> None:
    counters = read_counters(metrics_text(100, 40, 7, aborted=2, http_5xx=3))
    assert counters == Counters(tokens=100, verify_calls=40, requests=7, errors=5)


def test_a_replica_without_metrics_is_a_measurement_error() -> None:
    with pytest.raises(BakeError, match="sglang_service_enable_metrics"):
        read_counters(metrics_text(0, 0, 0, with_tokens=False))


def test_window_acceptance_is_tokens_per_verify_step() -> None:
    assert window_accept_length(Counters(120, 30, 3, 0)) == 4.0
    assert window_accept_length(Counters(120, 0, 3, 0)) == 1.0  # tokens without speculation
    assert window_accept_length(Counters(0, 0, 0, 0)) is None


def test_a_healthy_replica_passes() -> None:
    result = run(Replica([(5, 4.8)] * 10))
    assert result.phase == PASSED
    assert result.requests == 50
    assert result.accept_length == pytest.approx(4.8)
    assert result.samples == 10


def test_each_window_keeps_when_it_ended_and_its_output_rate_for_the_timeline() -> None:
    clock = FakeClock()
    result = watch(Replica([(5, 4.8)] * 10).scrape, SETTINGS, clock=clock, sleep=clock.sleep,
                   wall=lambda: 1_700_000_000 + clock())  # fmt: skip
    assert [w["t"] for w in result.windows] == [5.0 * n for n in range(1, 11)]
    assert [w["at"] - w["t"] for w in result.windows] == [1_700_000_000] * 10  # the fake clock starts at 0
    assert {w["tokens_per_s"] for w in result.windows} == {5 * 64 / 5}  # 5 requests of 64 tokens in 5 s


def test_a_silent_fallback_to_plain_decoding_fails_after_three_windows() -> None:
    result = run(Replica([(5, 4.8), (5, 4.8), (5, 1.0), (5, 1.0), (5, 1.0), (5, 4.8)]))
    assert result.phase == FAILED
    assert result.samples == 5  # stopped as soon as the failure limit was reached
    assert "fleet_rollout_bake_min_accept_length" in result.message
    assert "without speculation" in result.message
    assert result.min_accept_length == pytest.approx(1.0)


def test_one_low_window_is_noise_not_a_failure() -> None:
    assert run(Replica([(5, 4.8), (5, 1.5), (5, 4.8)] * 4)).phase == PASSED


def test_windows_without_traffic_neither_fail_nor_reset_the_count() -> None:
    replica = Replica([(5, 1.0), (0, 1.0), (5, 1.0), (5, 1.0)] + [(5, 4.8)] * 6)
    assert run(replica).phase == FAILED


def test_errors_beyond_the_budget_fail() -> None:
    replica = Replica([(5, 4.8)] * 10)
    original = replica.scrape

    def scrape_with_aborts() -> str:
        replica.aborted += 1
        return original()

    result = watch(scrape_with_aborts, SETTINGS, clock=(clock := FakeClock()), sleep=clock.sleep)
    assert result.phase == FAILED
    assert "fleet_rollout_bake_max_errors" in result.message


def test_no_traffic_is_inconclusive_not_a_pass() -> None:
    result = run(Replica([(0, 4.8)] * 10))
    assert result.phase == INCONCLUSIVE
    assert "fleet_rollout_bake_min_requests" in result.message


def test_metrics_that_cannot_be_read_are_inconclusive() -> None:
    replica = Replica([(5, 4.8)] * 10)
    calls = {"n": 0}

    def flaky() -> str:
        calls["n"] += 1
        if calls["n"] > 2:
            raise BakeError("GET http://127.0.0.1:1/metrics: connection refused")
        return replica.scrape()

    result = watch(flaky, SETTINGS, clock=(clock := FakeClock()), sleep=clock.sleep)
    assert result.phase == INCONCLUSIVE
    assert "3 times in a row" in result.message


def test_module_check_mode_scrapes_once(monkeypatch, capsys) -> None:
    monkeypatch.setattr(module, "http_scraper", lambda url: lambda: metrics_text(640, 160, 10))
    args = {"url": "http://127.0.0.1:30000/metrics", "seconds": 60, "min_accept_length": 2.0,
            "_ansible_check_mode": True}
    with patch_module_args(args), pytest.raises(SystemExit):
        module.main()
    out = json.loads(capsys.readouterr().out)
    assert out["changed"] is False
    assert out["requests"] == 10
    assert out["samples"] == 0
