"""The bake: a promoted replica watched under live traffic before it becomes known-good.

A background analysis as metric-gated delivery does it (Argo Rollouts, Flagger): after the gate, the replica serves
the fleet's real traffic for a while, and its own /metrics decide whether it stays. Acceptance is read from the
counters SGLang 0.5.23 bumps once per finished request (srt/observability/metrics_collector.py
``observe_one_finished_request``: ``sglang:generation_tokens_total`` by the request's tokens and
``sglang:spec_verify_calls_total`` by its verify steps), so tokens per verify step over the window is the live
acceptance of exactly the requests the window saw - never a stale gauge left by the gate's benchmark. A request
that decodes without speculation (SGLang's silent fallback to plain decoding) makes one token per step: a ratio of
1.0. Errors are ``sglang:num_aborted_requests_total`` and 5xx answers in ``sglang:http_responses_total``.

Runs on the replica with the engine venv's Python (prometheus_client's parser, which SGLang itself depends on).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field

from ansible.module_utils.specgate.common.http import HttpAnswer, request

try:  # the engine venv has it (SGLang depends on prometheus_client); the module runs with that interpreter
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:  # pragma: no cover - reported by read_counters
    text_string_to_metric_families = None

PASSED = "passed"
FAILED = "failed"
INCONCLUSIVE = "inconclusive"

# Family names as the parser gives them (a counter's family drops its _total suffix).
TOKENS = "sglang:generation_tokens"
VERIFY_CALLS = "sglang:spec_verify_calls"
REQUESTS = "sglang:num_requests"
ABORTED = "sglang:num_aborted_requests"
HTTP_RESPONSES = "sglang:http_responses"


class BakeError(Exception):
    """A measurement that could not be taken (not a failed metric)."""


@dataclass(frozen=True)
class Counters:
    tokens: float
    verify_calls: float
    requests: float
    errors: float

    def minus(self, other: Counters) -> Counters:
        return Counters(
            self.tokens - other.tokens,
            self.verify_calls - other.verify_calls,
            self.requests - other.requests,
            self.errors - other.errors,
        )


def read_counters(text: str) -> Counters:
    """Sum the counters the bake reads over every label set of one /metrics scrape."""
    if text_string_to_metric_families is None:
        raise BakeError("prometheus_client is not importable by this Python: run the bake with the engine venv's")
    sums = {TOKENS: 0.0, VERIFY_CALLS: 0.0, REQUESTS: 0.0, ABORTED: 0.0, HTTP_RESPONSES: 0.0}
    seen = set()
    for family in text_string_to_metric_families(text):
        if family.name not in sums:
            continue
        seen.add(family.name)
        for sample in family.samples:
            if not sample.name.endswith("_total"):
                continue  # _created samples
            if family.name == HTTP_RESPONSES and not str(sample.labels.get("status_code", "")).startswith("5"):
                continue
            sums[family.name] += float(sample.value)
    if TOKENS not in seen:
        raise BakeError(
            "the replica's /metrics has no sglang:generation_tokens_total: start it with metrics on "
            "(sglang_service_enable_metrics: true)"
        )
    return Counters(sums[TOKENS], sums[VERIFY_CALLS], sums[REQUESTS], sums[ABORTED] + sums[HTTP_RESPONSES])


@dataclass(frozen=True)
class BakeSettings:
    seconds: float
    interval: float
    min_accept_length: float
    max_errors: int
    min_requests: int
    failure_limit: int = 3  # consecutive failed windows before the verdict is Failed (Argo's failureLimit)
    error_limit: int = 3  # consecutive scrapes that could not be taken (Argo's consecutiveErrorLimit)


@dataclass
class BakeResult:
    phase: str
    seconds: float
    samples: int
    requests: float
    accept_length: float | None
    min_accept_length: float | None
    errors: float
    message: str
    windows: list[dict] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def window_accept_length(delta: Counters) -> float | None:
    """Tokens per verify step over a window; None with no finished request."""
    if delta.tokens <= 0:
        return None
    if delta.verify_calls <= 0:
        return 1.0  # tokens without a verify step: decoded without speculation
    return delta.tokens / delta.verify_calls


def watch(
    scrape: Callable[[], str],
    settings: BakeSettings,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    wall: Callable[[], float] = time.time,
) -> BakeResult:
    """Scrape every ``interval`` for ``seconds``; judge each interval's window and the whole bake.

    Failed as soon as ``failure_limit`` windows in a row carry traffic and fall below the floor, or the errors
    exceed ``max_errors``; Inconclusive when fewer than ``min_requests`` requests finished (no traffic is no
    evidence) or the metrics could not be read ``error_limit`` times in a row; else Passed. Each window is kept with
    the moment it ended (``at``, epoch seconds by ``wall``) and its output tokens per second: the rollout's timeline
    draws them where no Prometheus recorded the fleet (module_utils/specgate/fleet/timeline.py)."""
    start_at = clock()
    consecutive_errors = 0
    baseline: Counters | None = None
    while baseline is None:
        try:
            baseline = read_counters(scrape())
        except BakeError as error:
            consecutive_errors += 1
            if consecutive_errors >= settings.error_limit:
                return BakeResult(INCONCLUSIVE, 0.0, 0, 0, None, None, 0, f"no measurement: {error}")
            sleep(settings.interval)
    previous, previous_at, low_windows, windows = baseline, clock(), 0, []
    worst: float | None = None
    consecutive_errors = 0
    latest = baseline
    while clock() - start_at < settings.seconds:
        sleep(min(settings.interval, max(0.0, settings.seconds - (clock() - start_at))))
        try:
            latest = read_counters(scrape())
        except BakeError as error:
            consecutive_errors += 1
            if consecutive_errors >= settings.error_limit:
                return _result(INCONCLUSIVE, baseline, latest, clock() - start_at, windows, worst,
                               f"the replica's metrics could not be read {consecutive_errors} times in a row: {error}")
            continue
        consecutive_errors = 0
        window, ended = latest.minus(previous), clock()
        accept = window_accept_length(window)
        tokens_per_s = round(window.tokens / (ended - previous_at), 3) if ended > previous_at else None
        windows.append({"t": round(ended - start_at, 1), "at": round(wall(), 3), "requests": window.requests,
                        "accept_length": accept, "errors": window.errors, "tokens_per_s": tokens_per_s})
        previous, previous_at = latest, ended
        if accept is not None:
            worst = accept if worst is None else min(worst, accept)
            low_windows = low_windows + 1 if accept < settings.min_accept_length else 0
        total = latest.minus(baseline)
        if total.errors > settings.max_errors:
            return _result(FAILED, baseline, latest, clock() - start_at, windows, worst,
                           f"{total.errors:g} errored requests (aborted or 5xx) during the bake; "
                           f"fleet_rollout_bake_max_errors allows {settings.max_errors}")
        if low_windows >= settings.failure_limit:
            return _result(FAILED, baseline, latest, clock() - start_at, windows, worst,
                           f"live acceptance length {accept:.3g} in {low_windows} windows in a row, below the floor "
                           f"{settings.min_accept_length:g} (fleet_rollout_bake_min_accept_length)"
                           + ("; 1.0 is SGLang decoding without speculation" if accept <= 1.05 else ""))
    total = latest.minus(baseline)
    if total.requests < settings.min_requests:
        return _result(INCONCLUSIVE, baseline, latest, clock() - start_at, windows, worst,
                       f"{total.requests:g} requests finished during the bake, fewer than "
                       f"fleet_rollout_bake_min_requests ({settings.min_requests}): no evidence either way")
    overall = window_accept_length(total)
    if overall is not None and overall < settings.min_accept_length:
        return _result(FAILED, baseline, latest, clock() - start_at, windows, worst,
                       f"live acceptance length {overall:.3g} over the bake, below the floor "
                       f"{settings.min_accept_length:g} (fleet_rollout_bake_min_accept_length)")
    return _result(PASSED, baseline, latest, clock() - start_at, windows, worst, "")


def _result(  # noqa: PLR0917 - one call shape, six call sites in watch()
    phase: str, baseline: Counters, latest: Counters, seconds: float, windows: list[dict], worst: float | None,
    message: str,
) -> BakeResult:
    total = latest.minus(baseline)
    return BakeResult(phase, round(seconds, 1), len(windows), total.requests, window_accept_length(total), worst,
                      total.errors, message, windows)


def http_scraper(url: str, timeout: float = 10.0,
                 opener: Callable[..., HttpAnswer] = request) -> Callable[[], str]:  # fmt: skip
    """GET ``url`` (the replica's /metrics, open without the API key in SGLang: srt/utils/auth.py) through
    common/http.py: on loopback, never through a proxy set for the host's downloads."""

    def scrape() -> str:
        answer = opener("GET", url, None, {}, timeout)
        if answer.status != 200:
            raise BakeError(f"could not read the replica's metrics at {url}: {answer.describe()}")
        return answer.body.decode("utf-8", "replace")

    return scrape


def settings_from(params: Mapping) -> BakeSettings:
    return BakeSettings(
        seconds=float(params["seconds"]),
        interval=float(params["interval"]),
        min_accept_length=float(params["min_accept_length"]),
        max_errors=int(params["max_errors"]),
        min_requests=int(params["min_requests"]),
    )
