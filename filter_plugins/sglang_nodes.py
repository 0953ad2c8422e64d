"""Filters: a multi-node group → node ranks, per-node SGLang flags and the group's preflight refusals (logic in
module_utils/specgate/service/node_topology.py and module_utils/specgate/preflight/node_group.py)."""

from __future__ import annotations

from typing import Any

import ansible_collections.specgate.project.plugins.module_utils.paths  # noqa: F401 - module_utils on the path
from ansible.errors import AnsibleFilterError
from ansible.module_utils.specgate.common.engine import SglangConfigError
from ansible.module_utils.specgate.preflight.deployment_checks import failure_message
from ansible.module_utils.specgate.preflight.node_group import check_node_gpus, group_gpu
from ansible.module_utils.specgate.service.node_topology import (
    Topology,
    group_flags,
    node_flags,
    rank_flags,
    settings_from_vars,
    topology,
)


def _topology(settings: dict[str, Any], hostvars: Any, hosts: list[str]) -> Topology:
    ranks = {host: (hostvars.get(host) or {}).get("sglang_service_node_rank") for host in hosts}
    addresses = {host: (hostvars.get(host) or {}).get("ansible_host") or host for host in hosts}
    return topology(settings_from_vars(settings), list(hosts), ranks, addresses)


def _gpus(nodes: list[str], hostvars: Any) -> dict[str, Any]:
    return {host: (hostvars.get(host) or {}).get("specgate_gpu") for host in nodes}


def sglang_node_topology(settings: dict[str, Any], hostvars: Any, hosts: list[str]) -> dict[str, Any]:
    """`{{ settings | sglang_node_topology(hostvars, groups[group]) }}` → {group, nodes (rank order), nnodes,
    dist_init_addr, dist_timeout, gated_launch_port}; `settings` holds NodeSettings' fields (sglang_service_* names
    without the prefix)."""
    try:
        topo = _topology(settings, hostvars, hosts)
    except SglangConfigError as error:
        raise AnsibleFilterError(str(error)) from error
    host, port = topo.rendezvous
    return {"group": topo.group, "nodes": list(topo.nodes), "nnodes": topo.nnodes, "dist_init_addr":
            topo.dist_init_addr, "dist_init_host": host, "dist_init_port": port, "dist_timeout": topo.dist_timeout,
            "gated_launch_port": topo.gated_launch_port}


def sglang_node_topology_refusal(settings: dict[str, Any], hostvars: Any, hosts: list[str]) -> str:
    """'' when the group's ranks and rendezvous settings hold, else the refusal naming the variable and the fix."""
    try:
        _topology(settings, hostvars, hosts)
    except SglangConfigError as error:
        return str(error)
    return ""


def _from_fact(topo: dict[str, Any]) -> Topology:
    return Topology(topo["group"], tuple(topo["nodes"]), topo["dist_init_addr"], topo["dist_timeout"],
                    topo["gated_launch_port"])


def sglang_node_flags(topo: dict[str, Any], host: str, sglang_version: str) -> dict[str, Any]:
    """`{{ topology | sglang_node_flags(inventory_hostname, version) }}` → this node's multi-node flags, all of them."""
    try:
        return node_flags(_from_fact(topo), host, sglang_version)
    except SglangConfigError as error:
        raise AnsibleFilterError(str(error)) from error


def sglang_node_group_flags(topo: dict[str, Any], sglang_version: str) -> dict[str, Any]:
    """`{{ topology | sglang_node_group_flags(version) }}` → the flags every node shares: for the release's --config,
    so every node's release has the same id."""
    try:
        return group_flags(_from_fact(topo), sglang_version)
    except SglangConfigError as error:
        raise AnsibleFilterError(str(error)) from error


def sglang_node_rank_flags(topo: dict[str, Any], host: str) -> dict[str, Any]:
    """`{{ topology | sglang_node_rank_flags(inventory_hostname) }}` → {"node-rank": n}: for the unit's command line."""
    try:
        return rank_flags(_from_fact(topo), host)
    except SglangConfigError as error:
        raise AnsibleFilterError(str(error)) from error


def specgate_node_group_refusal(nodes: list[str], hostvars: Any) -> str:
    """`{{ nodes | specgate_node_group_refusal(hostvars) }}` → '' when every node's specgate_gpu agrees with rank 0's,
    else every difference, each naming the host that differs."""
    problems = check_node_gpus(nodes, _gpus(nodes, hostvars))
    return failure_message(problems) if problems else ""


def specgate_node_group_gpu(nodes: list[str], hostvars: Any) -> dict[str, Any]:
    """`{{ nodes | specgate_node_group_gpu(hostvars) }}` → rank 0's GPU fact with the GPUs of all nodes together, for
    sglang_fit_refusal."""
    return group_gpu(nodes, _gpus(nodes, hostvars))


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"sglang_node_topology": sglang_node_topology, "sglang_node_flags": sglang_node_flags,
                "sglang_node_topology_refusal": sglang_node_topology_refusal,
                "sglang_node_group_flags": sglang_node_group_flags, "sglang_node_rank_flags": sglang_node_rank_flags,
                "specgate_node_group_refusal": specgate_node_group_refusal,
                "specgate_node_group_gpu": specgate_node_group_gpu}
