"""Filters: a fleet rollout's batch plan, the verdict at the end of each batch, and the fleet report.

The logic lives in module_utils/specgate/fleet/rollout.py (unit-tested); these only hand Ansible's values over.
"""

from __future__ import annotations

from typing import Any

import ansible_collections.specgate.project.plugins.module_utils.paths  # noqa: F401 - module_utils on the path
from ansible.module_utils.specgate.fleet import rollout


def fleet_rollout_serial_refusal(serial: Any) -> str:
    """`{{ fleet_rollout_serial | fleet_rollout_serial_refusal }}` → '' or the refusal naming the variable."""
    return rollout.validate_serial(serial)


def fleet_rollout_batches(hosts: list[str], serial: Any) -> list[list[str]]:
    """`{{ ansible_play_hosts_all | fleet_rollout_batches(serial) }}` → the batches Ansible will run."""
    return rollout.batches(hosts, serial)


def fleet_rollout_batch_verdict(batch_hosts: list[str], rows: dict[str, Any], max_fail_percentage: int) -> dict:
    """`{{ batch | fleet_rollout_batch_verdict(rows, pct) }}` → {stop, failed, share, message}."""
    return rollout.batch_verdict(batch_hosts, rows, int(max_fail_percentage))


def fleet_rollout_report_rows(hosts: list[str], serial: Any, rows: dict[str, Any], reached: list[str]) -> list[dict]:
    """`{{ hosts | fleet_rollout_report_rows(serial, rows, reached) }}` → one row per host in batch order."""
    return rollout.report_rows(hosts, serial, rows, reached)


def fleet_rollout_report_markdown(rows: list[dict], plan: dict[str, Any]) -> str:
    """`{{ rows | fleet_rollout_report_markdown(plan) }}` → the fleet report's markdown."""
    return rollout.report_markdown(plan, rows)


def fleet_rollout_hosts_through(batches: list[list[str]], number: int) -> list[str]:
    """`{{ specgate_rollout.batches | fleet_rollout_hosts_through(n) }}` → the hosts of batches 1..n."""
    return rollout.hosts_through(batches, number)


def fleet_rollout_hosts_after(batches: list[list[str]], number: int) -> list[str]:
    """`{{ specgate_rollout.batches | fleet_rollout_hosts_after(n) }}` → the hosts of the batches after n."""
    return rollout.hosts_after(batches, number)


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "fleet_rollout_serial_refusal": fleet_rollout_serial_refusal,
            "fleet_rollout_batches": fleet_rollout_batches,
            "fleet_rollout_batch_verdict": fleet_rollout_batch_verdict,
            "fleet_rollout_report_rows": fleet_rollout_report_rows,
            "fleet_rollout_report_markdown": fleet_rollout_report_markdown,
            "fleet_rollout_hosts_through": fleet_rollout_hosts_through,
            "fleet_rollout_hosts_after": fleet_rollout_hosts_after,
        }
