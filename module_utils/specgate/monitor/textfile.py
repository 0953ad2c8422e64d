"""What a host serves, as metrics: specgate's own facts for the node exporter's textfile collector.

The gate proves a release once; after that, Prometheus watches the host. Its alert rules compare what SGLang
exports live (sglang:generation_tokens_total over sglang:spec_verify_calls_total: the bake's acceptance) with what
the gate measured for the release the host serves, and need to know which release that is and whether it was
proved. Those facts live on the host (the active release's server.yaml and gate.json); this module turns them into
the text exposition format with prometheus_client, so the node exporter serves them beside the host's own metrics:

- ``specgate_release_info{release, profile, algorithm, block_size, known_good}`` 1: the active release;
- ``specgate_gate_passed{release}``: 1 when its gate promoted it, 0 when not, absent when it was never gated;
- ``specgate_gate_<metric>{release}``: each gate metric's measured mean (accept_length, correctness, regression);
- ``specgate_gate_threshold{release, metric}``: the threshold it was judged against.

The text depends only on those facts (no timestamp), so a run that changes neither writes nothing.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Gauge, generate_latest

PREFIX = "specgate_"
# SGLang's config keys for the speculative algorithm and the draft block (sglang 0.5.23 --config keys).
ALGORITHM_KEY = "speculative-algorithm"
BLOCK_SIZE_KEYS = ("speculative-dflash-block-size", "speculative-num-draft-tokens")
_METRIC_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def gate_numbers(gate: Mapping[str, Any]) -> dict[str, tuple[float | None, float | None]]:
    """Each gate metric's measured mean (``analysis.metrics[].interval.mean``) and the threshold the verdict judged
    it against, by metric name; None where a gate.json has no finite number."""
    numbers = {}
    for metric in (gate.get("analysis") or {}).get("metrics") or []:
        name = str(metric.get("name", ""))
        if _METRIC_NAME.match(name):
            numbers[name] = (_number((metric.get("interval") or {}).get("mean")), _number(metric.get("threshold")))
    return numbers


def textfile(release: str, profile: str, known_good: bool, server_config: Mapping[str, Any],
             gate: Mapping[str, Any] | None) -> str:
    """The exposition text for the release a host serves (``server_config``: its server.yaml; ``gate``: its
    gate.json, None when it was never gated)."""
    registry = CollectorRegistry()
    algorithm = str(server_config.get(ALGORITHM_KEY) or "none")
    block_size = next((str(server_config[key]) for key in BLOCK_SIZE_KEYS if server_config.get(key) is not None), "")
    info = Gauge(PREFIX + "release_info", "The release the host serves (1), as specgate deployed it.",
                 ["release", "profile", "algorithm", "block_size", "known_good"], registry=registry)
    info.labels(release, profile, algorithm, block_size, str(bool(known_good)).lower()).set(1)
    if gate is not None and gate.get("release") == release:
        passed = Gauge(PREFIX + "gate_passed", "Whether the gate promoted the release (1) or not (0).", ["release"],
                       registry=registry)
        passed.labels(release).set(1 if gate.get("action") == "promote" else 0)
        numbers = sorted(gate_numbers(gate).items())
        for name, (mean, _) in numbers:
            if mean is not None:
                gauge = Gauge(f"{PREFIX}gate_{name}", f"The gate's measured mean of {name} for the release.",
                              ["release"], registry=registry)
                gauge.labels(release).set(mean)
        if any(threshold is not None for _, (_, threshold) in numbers):
            thresholds = Gauge(PREFIX + "gate_threshold", "The threshold the gate judged each metric against.",
                               ["release", "metric"], registry=registry)
            for name, (_, threshold) in numbers:
                if threshold is not None:
                    thresholds.labels(release, name).set(threshold)
    return generate_latest(registry).decode()
