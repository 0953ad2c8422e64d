"""fleet/timeline.py: a rollout's marks from the report's rows, its curves from Prometheus's query API (a loopback
stand-in answering as Prometheus's /api/v1/query_range does), and the picture drawn from both."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar
from urllib.parse import parse_qs, urlparse

import pytest
from ansible.module_utils.specgate.fleet.timeline import (
    ACCEPT_QUERY,
    TOKENS_QUERY,
    epoch,
    figure,
    gather,
    marks_of,
    png,
    window,
)

ROWS = [
    {"host": "a", "marks": {"leave": "2026-12-05T10:00:00", "switch": "2026-12-05T10:00:10",
                            "gate": "2026-12-05T10:00:40", "rejoin": "2026-12-05T10:00:45"}},
    {"host": "b", "marks": {}},  # a batch the rollout never reached
]
T0 = epoch("2026-12-05T10:00:00")


class FakePrometheus(BaseHTTPRequestHandler):
    queries: ClassVar[list[dict]] = []

    def do_GET(self) -> None:
        params = {key: values[0] for key, values in parse_qs(urlparse(self.path).query).items()}
        FakePrometheus.queries.append(params)
        value = "5.5" if params["query"] == ACCEPT_QUERY else "700"
        body = json.dumps({"status": "success", "data": {"resultType": "matrix", "result": [
            {"metric": {"host": "a"}, "values": [[T0 + 5 * i, value] for i in range(10)]}]}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def prometheus():
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakePrometheus)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    FakePrometheus.queries = []
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_marks_are_read_as_utc_epoch_seconds_per_host():
    marks = marks_of(ROWS)
    assert marks["a"] == {"leave": T0, "switch": T0 + 10, "gate": T0 + 40, "rejoin": T0 + 45}
    assert marks["b"] == {}
    assert epoch("2026-12-05T10:00:00+00:00") == T0


def test_the_window_pads_the_marks_and_never_reaches_past_now():
    marks = marks_of(ROWS)
    assert window(marks, T0 + 3600) == (T0 - 60, T0 + 105)
    assert window(marks, T0 + 50) == (T0 - 60, T0 + 50)
    assert window({"b": {}}, T0) == (T0 - 60, T0)


def test_curves_come_from_prometheus_over_the_rollouts_window(prometheus):
    timeline = gather(ROWS, prometheus, T0 + 3600)
    assert timeline.note == ""
    assert [point[1] for point in timeline.accept["a"]] == [5.5] * 10
    assert [point[1] for point in timeline.tokens["a"]] == [700.0] * 10
    assert timeline.samples() == {"a": 20, "b": 0}
    assert [q["query"] for q in FakePrometheus.queries] == [ACCEPT_QUERY, TOKENS_QUERY]
    assert float(FakePrometheus.queries[0]["start"]) == T0 - 60
    assert float(FakePrometheus.queries[0]["end"]) == T0 + 105


def test_without_prometheus_or_when_it_does_not_answer_the_picture_holds_the_marks_alone():
    assert gather(ROWS, "", T0).note == "no Prometheus configured: marks only"
    unreachable = gather(ROWS, "http://127.0.0.1:9", T0)
    assert unreachable.note.startswith("Prometheus at http://127.0.0.1:9 did not answer (ConnectionRefusedError")
    assert unreachable.note.endswith(": marks only")
    assert unreachable.samples() == {"a": 0, "b": 0}
    assert unreachable.source == ""


# Replica a baked after it rejoined: three windows as fleet_bake keeps them, one without traffic (no acceptance).
BAKED = [{**ROWS[0], "bake": {"phase": "passed", "windows": [
    {"t": 5.0, "at": T0 + 50, "requests": 4, "accept_length": 3.5, "errors": 0, "tokens_per_s": 610.0},
    {"t": 10.0, "at": T0 + 55, "requests": 0, "accept_length": None, "errors": 0, "tokens_per_s": 0.0},
    {"t": 15.0, "at": T0 + 60, "requests": 5, "accept_length": 1.0, "errors": 0, "tokens_per_s": 240.0}]}},
    ROWS[1]]


@pytest.mark.parametrize("prometheus_url", ["", "http://127.0.0.1:9"], ids=["none-configured", "unreachable"])
def test_without_prometheus_the_curves_are_each_replicas_bake_windows(prometheus_url):
    timeline = gather(BAKED, prometheus_url, T0 + 3600)
    assert timeline.source == "bake"
    assert timeline.accept == {"a": [(T0 + 50, 3.5), (T0 + 60, 1.0)], "b": []}
    assert timeline.tokens == {"a": [(T0 + 50, 610.0), (T0 + 55, 0.0), (T0 + 60, 240.0)], "b": []}
    assert timeline.note.endswith(": curves from each replica's bake only")
    accept_axes, _ = figure(timeline, "r1").axes
    (curve,) = [line for line in accept_axes.get_lines() if line.get_label() == "a"]
    assert list(curve.get_xdata()) == [50, 60]  # seconds since the first mark (leave at T0)
    assert curve.get_marker() == "o"


def test_prometheus_with_samples_is_preferred_to_the_bake(prometheus):
    timeline = gather(BAKED, prometheus, T0 + 3600)
    assert (timeline.source, timeline.note) == ("prometheus", "")
    assert [value for _, value in timeline.accept["a"]] == [5.5] * 10


def test_the_picture_draws_each_mark_on_both_panels_and_each_curve(prometheus):
    drawing = figure(gather(ROWS, prometheus, T0 + 3600), "fleet rollout r1")
    accept_axes, tokens_axes = drawing.axes
    for axes in (accept_axes, tokens_axes):
        vertical = [line for line in axes.get_lines() if len(set(line.get_xdata())) == 1]
        assert sorted(line.get_xdata()[0] for line in vertical) == [0, 10, 40, 45]
        curves = [line for line in axes.get_lines() if line not in vertical]
        assert [line.get_label() for line in curves] == ["a"]
    assert accept_axes.get_title() == "fleet rollout r1"
    assert png(gather(ROWS, "", T0), "r1").startswith(b"\x89PNG\r\n\x1a\n")


def test_a_marks_only_picture_says_why_in_its_title():
    drawing = figure(gather(ROWS, "", T0), "fleet rollout r1")
    assert drawing.axes[0].get_title() == "fleet rollout r1\nno Prometheus configured: marks only"
