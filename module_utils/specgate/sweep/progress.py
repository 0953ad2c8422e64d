"""The line a sweep prints as each point starts: point i of N, elapsed, and the ETA from the launches so far.

The ETA is the median time of the launches measured in this run (a point is an engine load plus its benchmark,
6 - 10 minutes on the field notes' hosts) times the points left; before the first launch finishes there is none.
In search mode N is the grid's size, an upper bound: the search stops earlier, so its ETA is a ceiling.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from ansible.module_utils.specgate.common.progress import format_duration


def progress_line(index: int, total: int, name: str, elapsed_s: float, launch_seconds: Sequence[float], *,
                  search: bool = False) -> str:  # fmt: skip
    """``index``: 1-based number of the point starting now; ``launch_seconds``: the finished launches' times."""
    of = f"at most {total}" if search else f"{total}"
    line = f"sweep point {index} of {of}: {name}; elapsed {format_duration(elapsed_s)}"
    if not launch_seconds:
        return line + "; ETA after the first launch"
    left = max(total - index + 1, 0)
    eta = statistics.median(launch_seconds) * left
    bound = "at most " if search else ""
    return line + f"; ETA {bound}{format_duration(eta)} ({len(launch_seconds)} launch(es) measured)"
