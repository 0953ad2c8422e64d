"""Filters: the facts of the release a host serves → the node exporter's textfile (logic in monitor/textfile), and
the inventory → Prometheus's configuration (logic in monitor/scrape)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import ansible_collections.specgate.project.plugins.module_utils.paths  # noqa: F401 - module_utils on the path
from ansible.errors import AnsibleFilterError
from ansible.module_utils.specgate.common.engine import SglangConfigError
from ansible.module_utils.specgate.common.http import local_url
from ansible.module_utils.specgate.fleet.router_client import worker_url
from ansible.module_utils.specgate.monitor.scrape import (
    ReplicaHost,
    RouterHost,
    ScrapeSettings,
    check_duration,
    port_of,
    prometheus_config,
)
from ansible.module_utils.specgate.monitor.textfile import textfile


def sglang_monitoring_textfile(active: str, profile: str, known_good: str, server_config: Any, gate: Any) -> str:
    """`{{ active_id | sglang_monitoring_textfile(active_id | sglang_release_label_of, known_good_id, server_yaml,
    gate_json_or_none) }}` → the text."""
    if not active:
        raise AnsibleFilterError("sglang_monitoring_textfile: the host serves no release (its active pointer is unset)")
    if not isinstance(server_config, Mapping):
        raise AnsibleFilterError(f"sglang_monitoring_textfile: release {active}'s server.yaml is not a mapping")
    return textfile(active, profile, active == known_good, server_config, gate if isinstance(gate, Mapping) else None)


def _address(vars_of: Mapping[str, Any], host: str) -> str:
    return str(vars_of.get("sglang_monitoring_scrape_address") or vars_of.get("ansible_host") or host)


def sglang_monitoring_prometheus_config(groups: Mapping[str, Any], hostvars: Any, settings: Mapping[str, Any]) -> dict:
    """`{{ groups | sglang_monitoring_prometheus_config(hostvars, settings) }}` → prometheus.yml as a mapping.

    `settings`: replica_group, router_group, engine_port and router_metrics_port (the service's and the router's
    defaults, for hosts that do not set them), node_exporter_port (the monitor's, likewise), retention (checked
    here, before the host changes) and ScrapeSettings' fields."""
    def vars_of(host: str) -> Mapping[str, Any]:
        return hostvars.get(host) or {}

    def port(host: str, variable: str, default: Any) -> int:
        value = vars_of(host).get(variable)
        return port_of(variable, host, default if value in (None, "") else value)

    try:
        replicas = [ReplicaHost(host, _address(vars_of(host), host),
                                port(host, "sglang_service_port", settings["engine_port"]),
                                port(host, "sglang_monitoring_node_exporter_port", settings["node_exporter_port"]),
                                vars_of(host).get("sglang_service_nodes_group"),
                                vars_of(host).get("sglang_service_node_rank"),
                                worker_url(host, vars_of(host), settings["engine_port"]))
                    for host in groups.get(settings["replica_group"]) or []]
        routers = [RouterHost(host, _address(vars_of(host), host),
                              port(host, "sglang_router_prometheus_port", settings["router_metrics_port"]))
                   for host in groups.get(settings["router_group"]) or []]
    except SglangConfigError as error:
        raise AnsibleFilterError(str(error)) from error
    scrape = ScrapeSettings(
        engine_job=str(settings["engine_job"]), scrape_interval=str(settings["scrape_interval"]),
        evaluation_interval=str(settings["evaluation_interval"]), rule_files=tuple(settings["rule_files"]),
        alertmanagers=tuple(settings.get("alertmanagers") or ()),
        extra_scrape_configs=tuple(settings.get("extra_scrape_configs") or ()))
    try:
        check_duration("sglang_monitoring_retention", settings["retention"])
        return prometheus_config(replicas, routers, groups, scrape)
    except SglangConfigError as error:
        raise AnsibleFilterError(str(error)) from error


def sglang_monitoring_prometheus_url(groups: Mapping[str, Any], hostvars: Any, default_port: Any) -> str:
    """`{{ groups | sglang_monitoring_prometheus_url(hostvars, 9090) }}` → the monitor's Prometheus as the controller
    reaches it: the first sglang_monitors host (else the first router's host, as deploy.yml's monitor play picks
    them) at its scrape address and sglang_monitoring_prometheus_port (``default_port``, the role's default, when it
    sets none); '' when the inventory has no monitor."""
    monitors = list(groups.get("sglang_monitors") or groups.get("sglang_routers") or [])
    if not monitors:
        return ""
    vars_of = hostvars.get(monitors[0]) or {}
    return local_url(_address(vars_of, monitors[0]), vars_of.get("sglang_monitoring_prometheus_port") or default_port)


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"sglang_monitoring_textfile": sglang_monitoring_textfile,
                "sglang_monitoring_prometheus_config": sglang_monitoring_prometheus_config,
                "sglang_monitoring_prometheus_url": sglang_monitoring_prometheus_url}
