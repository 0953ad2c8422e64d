"""Benchmark progress: which step of the matrix runs now (cell i of N), time so far and an ETA from the cells done.

The matrix is runs x prompt sets x contexts x concurrencies; on a real host a gate's benchmark takes many minutes,
so the play prints this line on each poll (common.progress.ProgressWriter writes it, specgate_follow_job reads it).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ansible.module_utils.specgate.common.progress import format_duration


class BenchProgress:
    """Told each step as it starts; reports the current one with elapsed time and the ETA of the remaining cells."""

    def __init__(self, total_cells: int, runs: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.total_cells = total_cells
        self.runs = runs
        self._clock = clock
        self._started = clock()
        self._cells_started_at: float | None = None
        self.cells_done = 0
        self.current = "starting"
        self.cell_index: int | None = None

    def step(self, what: str) -> None:
        """A step that is not a cell (prompt sizing, warm-up, eval, cross-check)."""
        self.current = what
        self.cell_index = None

    def cell(self, what: str) -> None:
        """The next cell of the matrix starts (the previous one, if any, is done)."""
        now = self._clock()
        if self._cells_started_at is None:
            self._cells_started_at = now
        if self.cell_index is not None:
            self.cells_done += 1
        self.cell_index = self.cells_done + 1
        self.current = what

    def cell_done(self) -> None:
        """The last cell of a run ended (what follows it is a step, not a cell)."""
        if self.cell_index is not None:
            self.cells_done += 1
            self.cell_index = None

    def report(self) -> dict[str, Any]:
        now = self._clock()
        elapsed = now - self._started
        eta = None
        if self.cells_done and self._cells_started_at is not None:
            per_cell = (now - self._cells_started_at) / self.cells_done
            eta = per_cell * (self.total_cells - self.cells_done)
        where = f"cell {self.cell_index} of {self.total_cells}: " if self.cell_index else ""
        line = f"bench: {where}{self.current}, {format_duration(elapsed)} elapsed"
        if eta is not None and self.cells_done < self.total_cells:
            line += f", about {format_duration(eta)} for the cells left"
        return {"cells_done": self.cells_done, "total_cells": self.total_cells, "elapsed_s": round(elapsed, 1),
                "eta_s": eta, "line": line}
