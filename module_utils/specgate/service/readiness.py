"""Readiness of a freshly started SGLang unit: /health until 200, and proof it runs the candidate.

Rules from the field (DESIGN.md, restart protocol): a refused or reset connection while the engine
loads is expected and retried; a unit that fails or is restarted by systemd ends the wait at once;
the wait is bounded by the load timeout; and a healthy answer only counts once /server_info shows the
candidate's settings (an old process once answered while the new one was still loading).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ansible.module_utils.specgate.common.http import request as http_request

# SubStates in which systemd has already given up on this start or is about to retry it.
FAILED_SUBSTATES = frozenset({"failed", "auto-restart", "dead", "exited"})


@dataclass(frozen=True)
class UnitState:
    active_state: str
    sub_state: str
    n_restarts: int
    main_pid: int

    @classmethod
    def from_props(cls, props: Mapping[str, str]) -> UnitState:
        return cls(
            active_state=props.get("ActiveState", ""),
            sub_state=props.get("SubState", ""),
            n_restarts=int(props.get("NRestarts") or 0),
            main_pid=int(props.get("MainPID") or 0),
        )


def unit_gave_up(state: UnitState, baseline_restarts: int) -> str | None:
    """Why the started unit can no longer become ready, or None while it still can."""
    if state.n_restarts > baseline_restarts:
        return f"the engine exited and systemd restarted it ({state.n_restarts - baseline_restarts} restart(s))"
    if state.active_state in ("failed", "inactive", "deactivating") or state.sub_state in FAILED_SUBSTATES:
        return f"the unit is {state.active_state} ({state.sub_state})"
    return None


@dataclass(frozen=True)
class Probe:
    """One /health attempt: an HTTP status, or the connection error that stood in for one."""

    status: int | None
    error: str | None = None


def http_get(
    url: str, timeout: float, headers: Mapping[str, str] | None = None, method: str = "GET"
) -> tuple[int | None, bytes, str | None]:
    """GET (or `method`, without a body) without raising: (status, body, error), through common/http.py (loopback
    direct whatever the proxy variables say; any other host keeps the environment's proxies)."""
    answer = http_request(method, url, b"" if method == "POST" else None, headers, timeout)
    return answer.status, answer.body, answer.error


def http_post(url: str, timeout: float = 5.0) -> Probe:
    """An empty POST (the gated launch's /gate/activate), as a Probe."""
    status, _body, error = http_get(url, timeout, method="POST")
    return Probe(status, error)


def probe_health(url: str, timeout: float = 5.0) -> Probe:
    status, _body, error = http_get(url, timeout)
    return Probe(status=status, error=error)


@dataclass
class ReadyResult:
    ready: bool
    waited_s: float
    polls: int
    reason: str = ""
    last_probe: Probe | None = None
    refused: int = 0
    loading: int = 0
    main_pid: int = 0

    def as_dict(self) -> dict:
        return {
            "ready": self.ready,
            "waited_s": round(self.waited_s, 3),
            "polls": self.polls,
            "reason": self.reason,
            "connection_errors": self.refused,
            "loading_answers": self.loading,
            "main_pid": self.main_pid,
            "last_status": self.last_probe.status if self.last_probe else None,
            "last_error": self.last_probe.error if self.last_probe else None,
        }


def wait_ready(
    probe: Callable[[], Probe],
    unit_state: Callable[[], UnitState],
    *,
    timeout: float,
    baseline_restarts: int | None = None,
    interval: float = 1.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> ReadyResult:
    """Poll until /health answers 200 while the unit is still the one we started, up to ``timeout`` s.

    Restarts count from ``baseline_restarts`` (NRestarts read right after the start); None counts them from the
    unit's own NRestarts as the wait first reads it. systemd keeps NRestarts across a stop and a start (a unit stopped
    while it waited to auto-restart a crashed engine carries its count into the next release), so a wait that
    started nothing (a confirm of what serves now) must not count from 0: it would read the known-good release a
    rollback just brought up as a crashing one."""
    start = clock()
    result = ReadyResult(ready=False, waited_s=0.0, polls=0)
    while True:
        state = unit_state()
        result.main_pid = state.main_pid
        if baseline_restarts is None:
            baseline_restarts = state.n_restarts
        gave_up = unit_gave_up(state, baseline_restarts)
        if gave_up:
            result.reason = gave_up
            break
        result.polls += 1
        last = probe()
        result.last_probe = last
        if last.status == 200:
            # Ask systemd once more: a 200 from a process that just died does not count.
            state = unit_state()
            gave_up = unit_gave_up(state, baseline_restarts)
            if gave_up:
                result.reason = gave_up
                break
            result.ready = True
            result.main_pid = state.main_pid
            break
        if last.status is None:
            result.refused += 1
        else:
            result.loading += 1
        elapsed = clock() - start
        if elapsed >= timeout:
            seen = f"HTTP {last.status}" if last.status is not None else last.error
            result.reason = f"not healthy after {elapsed:.0f} s (last answer: {seen})"
            break
        sleep(min(interval, max(timeout - elapsed, 0.0)))
    result.waited_s = clock() - start
    return result


def _normalise(value: object) -> object:
    """Bring a config value and SGLang's reported value to one comparable form."""
    if isinstance(value, bool):
        # True == 1.0 in Python; a flag switched on is not the number one.
        return ("bool", value)
    if value is None:
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        try:
            return float(text)
        except ValueError:
            pass
        if text.startswith("/"):
            return os.path.normpath(text)
        return text.lower()
    if isinstance(value, (list, tuple)):
        return [_normalise(item) for item in value]
    if isinstance(value, dict):
        return {str(k): _normalise(v) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class Mismatch:
    key: str
    expected: object
    actual: object
    missing: bool = False

    def as_dict(self) -> dict:
        return {"key": self.key, "expected": self.expected, "actual": self.actual, "missing": self.missing}

    def describe(self) -> str:
        if self.missing:
            return f"{self.key}: not reported by /server_info (expected {self.expected!r})"
        return f"{self.key}: expected {self.expected!r}, server runs {self.actual!r}"


def identity_mismatches(
    expected: Mapping[str, object], server_info: Mapping[str, object], ignore: frozenset[str] = frozenset()
) -> list[Mismatch]:
    """Each expected setting (flag or field spelling) that /server_info does not report as expected."""
    mismatches = []
    for flag, want in expected.items():
        key = flag.replace("-", "_")
        if key in ignore or flag in ignore:
            continue
        if key not in server_info:
            mismatches.append(Mismatch(key=key, expected=want, actual=None, missing=True))
        elif _normalise(want) != _normalise(server_info[key]):
            mismatches.append(Mismatch(key=key, expected=want, actual=server_info[key]))
    return mismatches


def fetch_server_info(base_url: str, api_key: str | None, timeout: float = 10.0) -> tuple[dict | None, str | None]:
    """GET /server_info with the bearer key when one is set: (info, error)."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    status, body, error = http_get(base_url.rstrip("/") + "/server_info", timeout, headers)
    if error:
        return None, f"/server_info unreachable: {error}"
    if status != 200:
        return None, f"/server_info answered HTTP {status}"
    try:
        info = json.loads(body)
    except ValueError as exc:
        return None, f"/server_info did not return JSON: {exc}"
    if not isinstance(info, dict):
        return None, "/server_info did not return a JSON object"
    return info, None


def redact(text: str, secrets: list[str]) -> str:
    """Blank out every secret occurrence in text taken from logs before it is reported."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "********")
    return text


def journal_tail(
    run_command: Callable[[list[str]], tuple[int, str, str]], unit: str, since: float, lines: int, secrets: list[str]
) -> list[str]:
    """The unit's journal since `since` (epoch seconds), at most `lines` lines, secrets redacted (run through
    `run_command`, e.g. a module's)."""
    _rc, out, err = run_command(
        ["journalctl", "-u", unit, "--since", f"@{int(since)}", "-n", str(lines), "--no-pager", "-o", "short-iso"]
    )
    return redact(out or err, secrets).splitlines()
