"""Benchmark progress: cell i of N, the step that runs, and the time the cells left should take."""

from __future__ import annotations

import pytest
from ansible.module_utils.specgate.gate.bench_progress import BenchProgress
from ansible.module_utils.specgate.gate.bench_runner import BenchSettings, cell_count
from fake_clock import FakeClock

pytestmark = pytest.mark.host


def test_cell_count_covers_runs_sets_contexts_and_concurrencies():
    s = BenchSettings(port=1, sets=("chat", "code"), contexts=(("short", 512), ("long", 8192)),
                      concurrency=(1, 8), runs=2)
    assert cell_count(s) == 2 * 2 * 2 * 2
    # The user set runs at its own (native) context only.
    assert cell_count(BenchSettings(port=1, sets=("code", "user"), contexts=(("short", 512), ("long", 8192)),
                                    concurrency=(1,), runs=1)) == 3


def test_lines_name_the_cell_and_estimate_the_rest_from_the_cells_done():
    clock = FakeClock()
    progress = BenchProgress(total_cells=4, runs=1, clock=clock)
    assert progress.report()["line"] == "bench: starting, 0s elapsed"
    progress.step("warm-up")
    clock.sleep(10)
    assert progress.report()["line"] == "bench: warm-up, 10s elapsed"
    progress.cell("run 1 of 1, set code, context short (512 tokens), concurrency 1")
    clock.sleep(30)
    assert progress.report()["line"] == (
        "bench: cell 1 of 4: run 1 of 1, set code, context short (512 tokens), concurrency 1, 40s elapsed")
    progress.cell("run 1 of 1, set code, context short (512 tokens), concurrency 8")
    clock.sleep(15)
    report = progress.report()
    assert report["cells_done"] == 1
    # 45 s for the one cell done so far: the three left take about 2m 15s.
    assert report["line"].endswith("concurrency 8, 55s elapsed, about 2m 15s for the cells left")
    progress.cell("c3")
    progress.cell("c4")
    progress.cell_done()
    progress.step("run 1 of 1, coding eval")
    assert progress.report()["cells_done"] == 4
    assert progress.report()["line"] == "bench: run 1 of 1, coding eval, 55s elapsed"
