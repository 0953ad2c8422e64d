"""A cheap synthetic sweep for the search and resume tests: per point, each use case's value from a formula."""

from __future__ import annotations

from ansible.module_utils.specgate.sweep.grid import Point, expand
from script_loader import load_script


def bench_script():
    return load_script("bench_sweep_search")


def lattice() -> list[Point]:
    return expand({"axes": {"block_size": [8], "budget": [4, 8, 12, 16], "topk": [4, 6], "window": [2048, None]}})


def synthetic_row(point: Point, *, peak: int = 8) -> dict:
    """Latency peaks at budget ``peak``; acceptance rises with budget; throughput falls; a window costs 5 %."""
    win = 0.95 if point.window else 1.0
    latency = (150.0 - abs(point.budget - peak) * 3.0) * win
    accept = (3.0 + point.budget * 0.1 + point.topk * 0.01) * win
    throughput = (2000.0 - point.budget * 50.0) * win
    return {"name": point.name, "release": f"r-{point.name}", "failed": False, "status": "ok",
            "bench_complete": True, "point": point.key(), "cost": list(point.cost()),
            "speed_c1_short": latency, "accept_long": accept, "tok_s_cmax": throughput,
            "per_run": {"speed_c1_short": [latency] * 3, "accept_long": [accept] * 3,
                        "tok_s_cmax": [throughput] * 3}}  # fmt: skip
