"""A bad Prometheus setting is refused before any replica changes: deploy.yml judges the monitor's settings and the
scrape configuration the inventory makes in a play of its own, before the replicas' play (the monitor's own play
runs last, after every replica switched)."""

from __future__ import annotations

from pathlib import Path

import pytest

from integration.preflight_runner import as_ct200
from integration.test_router_refusal import fleet_with_router

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
    run = as_ct200(tmp_path, "playbooks/deploy.yml", fleet_with_router(tmp_path), bad, cmdline="--check")
    assert run.status == "failed"
    failures = [e["event_data"] for e in run.events if e["event"] == "runner_on_failed"]
    assert [(f["host"], f["role"]) for f in failures] == [("lb1", "sglang_monitoring")], failures
    assert named in str(failures[0]["res"].get("msg")), failures[0]["res"]
    replica = {e["event_data"].get("role") for e in run.events
               if e["event"] == "runner_on_ok" and e["event_data"].get("host") == "ct200"}  # fmt: skip
    assert replica <= {"fleet_rollout"}, replica
    assert run.stats["changed"] == {}
