"""Prometheus's configuration for a fleet, generated from the inventory: what to scrape, labelled so the rules join.

specgate's alert rules (roles/sglang_monitoring/templates/specgate-rules.yml.j2) join SGLang's live counters with
what the gate measured on one label, ``host``: SGLang's /metrics and the node exporter's (whose textfile collector
serves specgate.prom) must both carry it. Three jobs:

- the engines (``engine_job``): one target per replica, the API-serving node only (rank 0 of a node group: the other
  ranks run no HTTP server, sglang 0.5.23 srt/entrypoints/engine.py), at its sglang_service_port;
- the router (``sglang-router``): sglang-router's own Prometheus endpoint (--prometheus-host/--prometheus-port);
- the node exporters (``node``): every replica host, followers included (their GPUs and disks matter too), whether
  specgate installed the exporter or the user runs their own.

Each target carries ``host`` (its inventory name) and, for the engines and node exporters, ``replica`` (the inventory
name of the node that serves its deployment's API: the host itself, or rank 0 of its node group); an engine also
carries ``worker``, the URL the router registers it at, which is the label of the router's ``smg_worker_health``.

Which release and profile a host serves are not target labels: they change with every deploy, and a deploy limited
to one host (``-l``) never rewrites the monitor's configuration. ``specgate_release_info{host, release, profile}``
states them, always current, and joins on ``host``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ansible.module_utils.specgate.common.engine import SglangConfigError
from ansible.module_utils.specgate.service.node_topology import replicas

ROUTER_JOB = "sglang-router"
NODE_JOB = "node"
# Prometheus's duration syntax (model/time.go ParseDuration): units from ms to y, largest first, each at most once.
_DURATION = re.compile(r"^(\d+y)?(\d+w)?(\d+d)?(\d+h)?(\d+m)?(\d+s)?(\d+ms)?$")


@dataclass(frozen=True)
class ReplicaHost:
    """One host of the replica group, as the monitor reads it from the inventory."""

    name: str
    address: str
    engine_port: int
    node_exporter_port: int
    nodes_group: str | None = None
    node_rank: Any = None
    # The URL a router registers the replica at (router_client.worker_url): the label the router's own
    # smg_worker_health{worker} carries, so a rule can tell a replica that serves but is out of the router.
    router_worker: str = ""


@dataclass(frozen=True)
class RouterHost:
    name: str
    address: str
    metrics_port: int


@dataclass(frozen=True)
class ScrapeSettings:
    engine_job: str
    scrape_interval: str
    evaluation_interval: str
    rule_files: tuple[str, ...]
    alertmanagers: tuple[str, ...] = ()
    extra_scrape_configs: tuple[Mapping[str, Any], ...] = ()


def check_duration(variable: str, value: Any) -> str:
    """``value`` as a Prometheus duration, or a refusal naming ``variable``."""
    text = str(value).strip()
    if not text or not _DURATION.match(text) or not any(character.isdigit() for character in text):
        raise SglangConfigError(
            f"{variable}: {value!r} is not a Prometheus duration. Fix: write a number and a unit, such as 15s, 10m "
            "or 15d (units ms, s, m, h, d, w, y)"
        )
    return text


def port_of(variable: str, host: str, value: Any) -> int:
    """A host's port setting as an int, or a refusal naming the variable and the host."""
    if isinstance(value, bool) or not str(value).strip().isdigit() or not 0 < int(str(value)) < 65536:
        raise SglangConfigError(
            f"{variable}: {host} sets {value!r}, which is not an int from 1 to 65535 (a port). Fix: set it to the "
            "port number the service listens on"
        )
    return int(str(value))


def replica_of(hosts: Sequence[ReplicaHost], groups: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """Each host → the host that serves its deployment's API: itself, or rank 0 of its node group (the fleet's
    replicas as node_topology.replicas makes them)."""
    settings = {host.name: {"sglang_service_nodes_group": host.nodes_group, "sglang_service_node_rank": host.node_rank}
                for host in hosts}
    names = set(settings)
    return {node: replica.rank0 for replica in replicas([host.name for host in hosts], settings, groups)
            for node in replica.nodes if node in names}


def _target(address: str, port: int) -> str:
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"


def _static(address: str, port: int, labels: Mapping[str, str]) -> dict[str, Any]:
    return {"targets": [_target(address, port)], "labels": dict(labels)}


def prometheus_config(hosts: Sequence[ReplicaHost], routers: Sequence[RouterHost],
                      groups: Mapping[str, Sequence[str]], settings: ScrapeSettings) -> dict[str, Any]:
    """prometheus.yml as a mapping: the global intervals, specgate's rule files, and one job each for the engines,
    the routers and the node exporters."""
    if not hosts and not routers:
        raise SglangConfigError(
            "sglang_monitoring_replica_group: the monitor finds no replica and no router to scrape. Fix: point "
            "sglang_monitoring_replica_group and sglang_monitoring_router_group at the inventory groups of your "
            "replicas and routers"
        )
    api_node = replica_of(hosts, groups)
    jobs: list[dict[str, Any]] = []
    engines = [_static(host.address, host.engine_port,
                       {"host": host.name, "replica": host.name, **({"worker": host.router_worker}
                                                                     if host.router_worker else {})})
               for host in hosts if api_node[host.name] == host.name]
    if engines:
        jobs.append({"job_name": settings.engine_job, "static_configs": engines})
    if routers:
        jobs.append({"job_name": ROUTER_JOB, "static_configs": [
            _static(router.address, router.metrics_port, {"host": router.name}) for router in routers]})
    if hosts:
        jobs.append({"job_name": NODE_JOB, "static_configs": [
            _static(host.address, host.node_exporter_port, {"host": host.name, "replica": api_node[host.name]})
            for host in hosts]})
    taken = {job["job_name"] for job in jobs}
    for extra in settings.extra_scrape_configs:
        name = extra.get("job_name") if isinstance(extra, Mapping) else None
        if not name or name in taken:
            raise SglangConfigError(
                f"sglang_monitoring_extra_scrape_configs: {extra!r} needs a job_name of its own (specgate's jobs: "
                f"{', '.join(sorted(taken))}). Fix: give each extra scrape config a unique job_name"
            )
        taken.add(name)
        jobs.append(dict(extra))
    config: dict[str, Any] = {
        "global": {"scrape_interval": check_duration("sglang_monitoring_scrape_interval", settings.scrape_interval),
                   "evaluation_interval": check_duration("sglang_monitoring_evaluation_interval",
                                                         settings.evaluation_interval)},
        "rule_files": list(settings.rule_files),
        "scrape_configs": jobs,
    }
    if settings.alertmanagers:
        config["alerting"] = {"alertmanagers": [{"static_configs": [{"targets": list(settings.alertmanagers)}]}]}
    return config
