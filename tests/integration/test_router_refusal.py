"""A bad router setting is refused before any replica changes: deploy.yml judges the router's settings in a play of
their own, before the replicas' play (judged only in the router's play at the end, `sglang_router_policy: roundrobin`
stopped the run after every replica had switched)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from integration.preflight_runner import PROJECT_ROOT, as_ct200

pytestmark = pytest.mark.slow


def fleet_with_router(tmp_path: Path) -> Path:
    """The example fleet's ct200 and a router host lb1, both this machine (local connection)."""
    inventory = tmp_path / "inventory"
    shutil.copytree(PROJECT_ROOT / "inventory" / "group_vars", inventory / "group_vars")
    shutil.copytree(PROJECT_ROOT / "inventory" / "host_vars", inventory / "host_vars")
    hosts = {"all": {"children": {
        "sglang_hosts": {"children": {"pcie_boxes": {"hosts": {"ct200": {"ansible_host": "ct200"}}}}},
        # One replica behind it: the rollout's plan would otherwise refuse taking it out (a fleet of one).
        "sglang_routers": {"hosts": {"lb1": {"ansible_host": "lb1", "sglang_router_min_healthy_workers": 0}}},
    }}}  # fmt: skip
    (inventory / "hosts.yml").write_text(yaml.safe_dump(hosts))
    return inventory / "hosts.yml"


def refused_on_the_router_host_before_any_replica(tmp_path: Path, bad: dict, role: str, named: str) -> None:
    """deploy.yml with `bad` fails on lb1, in `role`, naming `named`, while the replica ct200 ran nothing but the
    rollout's read-only plan and nothing changed."""
    run = as_ct200(tmp_path, "playbooks/deploy.yml", fleet_with_router(tmp_path), bad, cmdline="--check")
    assert run.status == "failed"
    failures = [e["event_data"] for e in run.events if e["event"] == "runner_on_failed"]
    assert [(f["host"], f["role"]) for f in failures] == [("lb1", role)], failures
    assert named in str(failures[0]["res"].get("msg")), failures[0]["res"]
    # The replica ran the rollout's read-only plan and nothing else: no stage of its play started.
    replica = {e["event_data"].get("role") for e in run.events
               if e["event"] == "runner_on_ok" and e["event_data"].get("host") == "ct200"}  # fmt: skip
    assert replica <= {"fleet_rollout"}, replica
    assert run.stats["changed"] == {}


@pytest.mark.parametrize(
    ("bad", "named"),
    [
        ({"sglang_router_policy": "roundrobin"}, "sglang_router_policy"),
        ({"sglang_router_prometheus_port": 30080, "sglang_router_port": 30080}, "sglang_router_prometheus_port"),
        ({"sglang_router_packages": ["sglang-router >= 0.3"]}, "sglang-router >= 0.3 not pinned"),
    ],
    ids=["policy", "metrics-port", "unpinned"],
)
def test_a_bad_router_setting_is_refused_before_any_replica_changes(tmp_path: Path, bad: dict, named: str) -> None:
    refused_on_the_router_host_before_any_replica(tmp_path, bad, "sglang_router", named)
