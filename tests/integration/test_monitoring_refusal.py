"""A bad Prometheus setting is refused before any replica changes: deploy.yml judges the monitor's settings and the
scrape configuration the inventory makes in a play of its own, before the replicas' play (the monitor's own play
runs last, after every replica switched)."""

from __future__ import annotations

from pathlib import Path

import pytest

from integration.test_router_refusal import refused_on_the_router_host_before_any_replica

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    ("bad", "named"),
    [
        ({"sglang_monitoring_retention": "15 days"}, "sglang_monitoring_retention: '15 days' is not a Prometheus"),
        ({"sglang_monitoring_scrape_interval": "fast"}, "sglang_monitoring_scrape_interval: 'fast'"),
        ({"sglang_monitoring_extra_scrape_configs": [{"job_name": "node", "static_configs": []}]},
         "sglang_monitoring_extra_scrape_configs"),
    ],
    ids=["retention", "scrape-interval", "job-name-taken"],
)
def test_a_bad_monitoring_setting_is_refused_before_any_replica_changes(tmp_path: Path, bad: dict, named: str) -> None:
    refused_on_the_router_host_before_any_replica(tmp_path, bad, "sglang_monitoring", named)
