"""Filters: a fleet rollout's policy and plan, the verdict at the end of each batch, the fleet report, and the words
that ask a person to approve the next batch.

The logic lives in module_utils/specgate/fleet/rollout.py and approval.py (unit-tested); these only hand Ansible's
values over. The batch verdict and the report read the hosts' published rows from ``hostvars`` in Python, not in
Jinja loops.
"""

from __future__ import annotations

from typing import Any

import ansible_collections.specgate.project.plugins.module_utils.paths  # noqa: F401 - module_utils on the path
from ansible.module_utils.specgate.common.engine import SglangConfigError
from ansible.module_utils.specgate.fleet import approval, rollout
from ansible.module_utils.specgate.service.node_topology import replicas


def fleet_rollout_policy_refusal(settings: dict[str, Any]) -> str:
    """`{{ _fleet_rollout_settings | fleet_rollout_policy_refusal }}` → '' or every problem, naming its variable."""
    return rollout.RolloutPolicy.from_settings(settings).refusal()


def fleet_rollout_replicas(hosts: list[str], hostvars: Any, groups: Any) -> dict[str, Any]:
    """`{{ ansible_play_hosts_all | fleet_rollout_replicas(hostvars, groups) }}` → {hosts, replicas: [{name, nodes}]
    in the hosts' order (a single host, or a node group with its nodes in rank order), refusal: '' or why the batches
    could not keep a group whole (its ranks cannot hold, or its nodes stand apart among ``hosts``)."""
    try:
        found = [{"name": replica.name, "nodes": list(replica.nodes)}
                 for replica in replicas(list(hosts), hostvars, groups)]  # fmt: skip
    except SglangConfigError as error:
        return {"hosts": list(hosts), "replicas": [{"name": host, "nodes": [host]} for host in hosts],
                "refusal": str(error)}  # fmt: skip
    return {"hosts": list(hosts), "replicas": found, "refusal": rollout.replica_refusal(list(hosts), found)}


def fleet_rollout_plan(settings: dict[str, Any], found: dict[str, Any], rollout_id: str, router: str,
                       reports_dir: str) -> dict[str, Any]:  # fmt: skip
    """`{{ _fleet_rollout_settings | fleet_rollout_plan(_fleet_rollout_found, id, router, dir) }}` → the
    specgate_rollout fact: the policy, its batches of the replicas ``found`` (fleet_rollout_replicas's) and their
    hosts, the router and the report's directory."""
    policy = rollout.RolloutPolicy.from_settings(settings)
    return rollout.plan(policy, found["hosts"], found["replicas"], rollout_id=rollout_id, router=router,
                        reports_dir=reports_dir)  # fmt: skip


def fleet_rollout_batches(hosts: list[str], serial: Any) -> list[list[str]]:
    """`{{ ansible_play_hosts_all | fleet_rollout_batches(serial) }}` → the batches Ansible will run."""
    return rollout.batches(hosts, serial)


def fleet_rollout_disagreeing(hostvars: Any, hosts: list[str]) -> list[str]:
    """`{{ hostvars | fleet_rollout_disagreeing(ansible_play_hosts_all) }}` → the rollout settings the hosts'
    inventory values disagree on."""
    return rollout.disagreeing(hostvars, hosts)


def fleet_rollout_batch_end(plan: dict[str, Any], hostvars: Any, host: str) -> dict[str, Any]:
    """`{{ specgate_rollout | fleet_rollout_batch_end(hostvars, inventory_hostname) }}` → the batch's verdict
    {stop, failed, message, number, promoted, not_started, next_batch, waits_for_approval}."""
    return rollout.batch_end(plan, hostvars, host)


def fleet_rollout_report(plan: dict[str, Any], hostvars: Any, batch_number: int, stopped: str = "") -> dict[str, Any]:
    """`{{ specgate_rollout | fleet_rollout_report(hostvars, n, stopped) }}` → {json, markdown} of the fleet report."""
    return rollout.report(plan, hostvars, int(batch_number), stopped)


def fleet_rollout_approval_request(plan: dict[str, Any], batch_number: int, hosts: list[str]) -> str:
    """`{{ specgate_rollout | fleet_rollout_approval_request(n, hosts) }}` → what the person is asked, with commands."""
    return approval.instructions(plan["reports_dir"], int(batch_number), list(hosts), int(plan["pause_timeout"]))


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "fleet_rollout_policy_refusal": fleet_rollout_policy_refusal,
            "fleet_rollout_replicas": fleet_rollout_replicas,
            "fleet_rollout_plan": fleet_rollout_plan,
            "fleet_rollout_batches": fleet_rollout_batches,
            "fleet_rollout_disagreeing": fleet_rollout_disagreeing,
            "fleet_rollout_batch_end": fleet_rollout_batch_end,
            "fleet_rollout_report": fleet_rollout_report,
            "fleet_rollout_approval_request": fleet_rollout_approval_request,
        }
