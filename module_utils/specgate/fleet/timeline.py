"""A fleet rollout as a picture: live acceptance and output tokens/s per replica over the rollout's window, read from
Prometheus's query API, with the moments each replica left the router, switched, was gated and rejoined.

The report (fleet.md) says what happened; the picture shows what the fleet's clients saw meanwhile: the dip while a
replica is out of the router, a canary whose acceptance falls after its gate passed. The marks are the rollout's own
(the fleet report's rows: fleet_rollout's leave, mark and rejoin steps, in UTC); the curves are what SGLang's counters
say, as the rules read them (tokens per verify step, tokens per second). Without a Prometheus to ask, or one that has
no samples for the window yet (a fleet's first deploy installs it last), the curves are the bakes' own windows (each
replica's counters as fleet_bake read them, module_utils/specgate/fleet/bake.py): only while each baked, but read from
the same counters. With neither, the picture holds the marks alone. Its title says which.
"""

from __future__ import annotations

import io
import json
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from ansible.module_utils.specgate.common.http import request

# The order of a replica's steps in a rollout, and how each is drawn.
MARKS = ("leave", "switch", "gate", "rejoin")
_MARK_STYLE = {"leave": ":", "switch": "--", "gate": "-.", "rejoin": "-"}
# Prometheus's counters as the alert rules read them (specgate-rules.yml.j2), over one minute instead of the rules'
# ten: a rollout lasts minutes. Not per scrape (irate): SGLang bumps these counters once per finished request, so a
# long request lands as one spike (tried on molecule/fleet: unreadable); a minute holds four scrapes at the default
# 15 s and smooths the spikes, at the price of curves that trail a step by up to a minute.
RATE_WINDOW = "1m"
ACCEPT_QUERY = (f"sum by (host) (rate(sglang:generation_tokens_total[{RATE_WINDOW}]))"
                f" / sum by (host) (rate(sglang:spec_verify_calls_total[{RATE_WINDOW}]))")
TOKENS_QUERY = f"sum by (host) (rate(sglang:generation_tokens_total[{RATE_WINDOW}]))"
# Seconds drawn before the first mark and after the last one.
PADDING_S = 60.0
MAX_POINTS = 400


@dataclass
class Timeline:
    """What the picture shows: per host, its marks (epoch seconds) and its two curves [(epoch seconds, value)]."""

    marks: dict[str, dict[str, float]]
    accept: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    tokens: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    note: str = ""
    # Where the curves come from: "prometheus", "bake" (each replica's bake windows) or "" (none: marks only).
    source: str = ""

    def samples(self) -> dict[str, int]:
        return {host: len(self.accept.get(host, [])) + len(self.tokens.get(host, [])) for host in self.marks}


def epoch(stamp: str) -> float:
    """An ISO 8601 moment (Ansible's now(utc=true).isoformat(): naive, UTC) → epoch seconds."""
    moment = datetime.fromisoformat(str(stamp))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def marks_of(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """Each host of the fleet report → its marks in epoch seconds (hosts no batch reached have none)."""
    return {str(row["host"]): {name: epoch(stamp) for name, stamp in (row.get("marks") or {}).items()
                               if name in MARKS and stamp}
            for row in rows}


def window(marks: Mapping[str, Mapping[str, float]], now: float) -> tuple[float, float]:
    moments = [moment for host_marks in marks.values() for moment in host_marks.values()]
    if not moments:
        return now - PADDING_S, now
    return min(moments) - PADDING_S, min(max(moments) + PADDING_S, now)


def query_range(prometheus_url: str, query: str, start: float, end: float,
                timeout: float = 10.0) -> tuple[dict[str, list[tuple[float, float]]], str]:
    """Prometheus's /api/v1/query_range, by the series' host label, and '' - or no series and why Prometheus did
    not answer (for the picture's note: never a refusal)."""
    step = max(2.0, (end - start) / MAX_POINTS)
    params = {"query": query, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:.3f}"}
    answer = request("GET", prometheus_url.rstrip("/") + "/api/v1/query_range?" + urllib.parse.urlencode(params),
                     timeout=timeout)
    if answer.status != 200:
        return {}, f"Prometheus at {prometheus_url} did not answer ({answer.status or answer.error})"
    try:
        result = json.loads(answer.body)["data"]["result"]
    except (ValueError, KeyError, TypeError):
        return {}, f"Prometheus at {prometheus_url} answered no query result"
    series: dict[str, list[tuple[float, float]]] = {}
    for entry in result:
        host = entry.get("metric", {}).get("host")
        if host:
            series[host] = [(float(moment), float(value)) for moment, value in entry.get("values", [])]
    return series, ""


def bake_curves(rows: Sequence[Mapping[str, Any]]) -> tuple[dict[str, list[tuple[float, float]]],
                                                            dict[str, list[tuple[float, float]]]]:
    """Each host's bake windows (the report row's ``bake.windows``, each with the moment it ended) → its acceptance
    and tokens/s curves; windows without traffic have no acceptance and are left out of that curve."""
    accept: dict[str, list[tuple[float, float]]] = {}
    tokens: dict[str, list[tuple[float, float]]] = {}
    for row in rows:
        windows = [w for w in ((row.get("bake") or {}).get("windows") or []) if w.get("at") is not None]
        host = str(row["host"])
        accept[host] = [(float(w["at"]), float(w["accept_length"])) for w in windows
                        if w.get("accept_length") is not None]
        tokens[host] = [(float(w["at"]), float(w["tokens_per_s"])) for w in windows
                        if w.get("tokens_per_s") is not None]
    return accept, tokens


def gather(rows: Sequence[Mapping[str, Any]], prometheus_url: str, now: float) -> Timeline:
    """The rollout's marks from the report's rows, and its curves from Prometheus when one is named and has samples
    for the window, else from the bakes' windows when a replica baked, else none."""
    timeline = Timeline(marks_of(rows))
    if prometheus_url:
        start, end = window(timeline.marks, now)
        timeline.accept, why = query_range(prometheus_url, ACCEPT_QUERY, start, end)
        if not why:
            timeline.tokens, why = query_range(prometheus_url, TOKENS_QUERY, start, end)
        if not why and any(timeline.samples().values()):
            timeline.source = "prometheus"
            return timeline
        why = why or f"Prometheus at {prometheus_url} has no samples for this window yet"
    else:
        why = "no Prometheus configured"
    timeline.accept, timeline.tokens = bake_curves(rows)
    timeline.source = "bake" if any(timeline.samples().values()) else ""
    timeline.note = f"{why}: curves from each replica's bake only" if timeline.source else f"{why}: marks only"
    return timeline


def figure(timeline: Timeline, title: str) -> Any:
    """The picture: acceptance above, tokens/s below, one colour per host, its marks as vertical lines."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    drawing = Figure(figsize=(11, 6.5), dpi=100, layout="constrained")
    accept_axes, tokens_axes = drawing.subplots(2, 1, sharex=True)
    colours = matplotlib.colormaps["tab10"]
    moments = [moment for marks in timeline.marks.values() for moment in marks.values()]
    starts = [points[0][0] for curves in (timeline.accept, timeline.tokens) for points in curves.values() if points]
    # Seconds from the rollout's first mark (the curves start a little before it), else from the first sample.
    origin = min(moments or starts or [0.0])
    for index, host in enumerate(sorted(timeline.marks)):
        colour = colours(index % 10)
        for axes, curves in ((accept_axes, timeline.accept), (tokens_axes, timeline.tokens)):
            points = curves.get(host, [])
            if points:  # a bake's windows are seconds apart: each one a dot on its line
                axes.plot([moment - origin for moment, _ in points], [value for _, value in points], color=colour,
                          label=host, marker="o" if timeline.source == "bake" else None, markersize=3)
            for name in MARKS:
                if name in timeline.marks[host]:
                    axes.axvline(timeline.marks[host][name] - origin, color=colour, linestyle=_MARK_STYLE[name],
                                 linewidth=1.2, label=f"{host} {name}" if axes is accept_axes else None)
    accept_axes.set_ylabel("live acceptance (tokens / verify step)")
    tokens_axes.set_ylabel("output tokens/s")
    since = datetime.fromtimestamp(origin, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    tokens_axes.set_xlabel(f"seconds since the rollout's first mark ({since})" if moments else f"seconds since {since}")
    accept_axes.set_title(title + (f"\n{timeline.note}" if timeline.note else ""), fontsize=10)
    accept_axes.legend(fontsize=7, ncol=2, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    for axes in (accept_axes, tokens_axes):
        axes.grid(alpha=0.3)
    return drawing


def png(timeline: Timeline, title: str) -> bytes:
    out = io.BytesIO()
    figure(timeline, title).savefig(out, format="png", metadata={"Software": None})
    return out.getvalue()
