"""Engine load progress: how long this load has taken against the last load of the same release on this host.

A Kimi-size engine loads for 6-10 minutes with nothing on the terminal; the last load of the same release on
the same host is the honest yardstick (same weights, same page cache state, same GPUs), so each poll says
"2m 10s of about 6m 05s". Load times are kept per release in a small JSON file on the host.
"""

from __future__ import annotations

import json
import os
from typing import Any

from ansible.module_utils.specgate.common.progress import format_duration, write_json_atomic

# Releases whose load time is kept; older ones are dropped (a host sees a few hundred releases at most).
KEPT_RELEASES = 200


def read_load_times(path: str) -> dict[str, float]:
    """{release id: seconds of its last load}; an unreadable or missing file is no history."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): float(v) for k, v in data.items() if isinstance(v, (int, float))}


def record_load_time(path: str, release: str, seconds: float) -> None:
    """Remember this load as the release's last one (most recent last, so the oldest go first)."""
    times = read_load_times(path)
    times.pop(release, None)
    times[release] = round(seconds, 1)
    kept = dict(list(times.items())[-KEPT_RELEASES:])
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    write_json_atomic(path, kept)


def load_report(*, release: str, elapsed: float, last: float | None) -> dict[str, Any]:
    """One progress report with its human line."""
    line = f"engine: loading {release}, {format_duration(elapsed)}"
    if last is None:
        line += " (first load of this release on this host)"
    elif elapsed <= last:
        line += f" of about {format_duration(last)} (its last load here)"
    else:
        line += f", longer than its last load here ({format_duration(last)})"
    return {"release": release, "elapsed_s": round(elapsed, 1), "last_load_s": last, "line": line}
