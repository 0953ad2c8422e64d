"""monitor/scrape.py: the inventory → Prometheus's scrape jobs, labelled so specgate's rules join on `host`."""

from __future__ import annotations

import pytest
from ansible.module_utils.specgate.common.engine import SglangConfigError
from ansible.module_utils.specgate.monitor.scrape import (
    ReplicaHost,
    RouterHost,
    ScrapeSettings,
    check_duration,
    port_of,
    prometheus_config,
    replica_of,
)

SETTINGS = ScrapeSettings(engine_job="sglang", scrape_interval="15s", evaluation_interval="15s",
                          rule_files=("/etc/prometheus/specgate-rules.yml",))


def job(config: dict, name: str) -> list[tuple[str, dict]]:
    (found,) = [entry for entry in config["scrape_configs"] if entry["job_name"] == name]
    return [(static["targets"][0], static["labels"]) for static in found["static_configs"]]


def test_each_replica_its_router_and_each_node_exporter_are_scraped_with_the_host_label():
    hosts = [ReplicaHost("a", "10.0.0.1", 30000, 9100), ReplicaHost("b", "10.0.0.2", 30001, 9101)]
    config = prometheus_config(hosts, [RouterHost("lb", "10.0.0.9", 29000)], {}, SETTINGS)
    assert job(config, "sglang") == [("10.0.0.1:30000", {"host": "a", "replica": "a"}),
                                     ("10.0.0.2:30001", {"host": "b", "replica": "b"})]
    assert job(config, "sglang-router") == [("10.0.0.9:29000", {"host": "lb"})]
    assert job(config, "node") == [("10.0.0.1:9100", {"host": "a", "replica": "a"}),
                                   ("10.0.0.2:9101", {"host": "b", "replica": "b"})]
    assert config["rule_files"] == ["/etc/prometheus/specgate-rules.yml"]
    assert config["global"] == {"scrape_interval": "15s", "evaluation_interval": "15s"}
    assert "alerting" not in config


def test_a_node_group_is_one_replica_scraped_at_its_rank_0_with_every_node_exporter_named_after_it():
    groups = {"pair": ["n1", "n2"]}
    hosts = [ReplicaHost("n1", "10.0.0.1", 30000, 9100, "pair", 1),
             ReplicaHost("n2", "10.0.0.2", 30000, 9100, "pair", 0),
             ReplicaHost("solo", "10.0.0.3", 30000, 9100)]
    assert replica_of(hosts, groups) == {"n1": "n2", "n2": "n2", "solo": "solo"}
    config = prometheus_config(hosts, [], groups, SETTINGS)
    assert [target for target, _ in job(config, "sglang")] == ["10.0.0.2:30000", "10.0.0.3:30000"]
    assert [labels["replica"] for _, labels in job(config, "node")] == ["n2", "n2", "solo"]
    assert [entry["job_name"] for entry in config["scrape_configs"]] == ["sglang", "node"]


def test_unranked_nodes_take_the_groups_inventory_order_as_the_service_does():
    hosts = [ReplicaHost("n2", "b", 1, 2, "pair"), ReplicaHost("n1", "a", 1, 2, "pair")]
    assert replica_of(hosts, {"pair": ["n1", "n2"]}) == {"n2": "n1", "n1": "n1"}


def test_an_engine_carries_the_url_its_router_registers_it_at_as_the_routers_worker_label():
    hosts = [ReplicaHost("a", "10.0.0.1", 30000, 9100, router_worker="http://10.0.0.1:30000")]
    assert job(prometheus_config(hosts, [], {}, SETTINGS), "sglang")[0][1] == {
        "host": "a", "replica": "a", "worker": "http://10.0.0.1:30000"}


def test_an_ipv6_address_is_bracketed():
    config = prometheus_config([ReplicaHost("a", "fd00::1", 30000, 9100)], [], {}, SETTINGS)
    assert job(config, "sglang")[0][0] == "[fd00::1]:30000"


def test_alertmanagers_and_extra_jobs_are_added():
    settings = ScrapeSettings("sglang", "15s", "15s", (), alertmanagers=("am:9093",),
                              extra_scrape_configs=({"job_name": "dcgm", "static_configs": [{"targets": ["a:9400"]}]},))
    config = prometheus_config([ReplicaHost("a", "a", 1, 2)], [], {}, settings)
    assert config["alerting"] == {"alertmanagers": [{"static_configs": [{"targets": ["am:9093"]}]}]}
    assert config["scrape_configs"][-1]["job_name"] == "dcgm"


@pytest.mark.parametrize("extra", [{"static_configs": []}, {"job_name": "node"}, "dcgm"])
def test_an_extra_job_without_a_name_of_its_own_is_refused(extra):
    settings = ScrapeSettings("sglang", "15s", "15s", (), extra_scrape_configs=(extra,))
    with pytest.raises(SglangConfigError, match=r"sglang_monitoring_extra_scrape_configs.*Fix: give each"):
        prometheus_config([ReplicaHost("a", "a", 1, 2)], [], {}, settings)


def test_nothing_to_scrape_is_refused_naming_the_groups():
    with pytest.raises(SglangConfigError, match=r"sglang_monitoring_replica_group.*sglang_monitoring_router_group"):
        prometheus_config([], [], {}, SETTINGS)


def test_a_node_group_with_ranks_on_some_nodes_only_is_refused_as_the_service_refuses_it():
    hosts = [ReplicaHost("n1", "a", 1, 2, "pair", 0), ReplicaHost("n2", "b", 1, 2, "pair")]
    with pytest.raises(SglangConfigError, match="sglang_service_node_rank"):
        replica_of(hosts, {"pair": ["n1", "n2"]})


@pytest.mark.parametrize("value", ["15s", "10m", "15d", "1h30m", "500ms", "2w"])
def test_prometheus_durations_pass(value):
    assert check_duration("sglang_monitoring_retention", value) == value


@pytest.mark.parametrize("value", ["", "15", "fifteen days", "15 d", "m", "30m1h", None])
def test_a_bad_duration_is_refused_naming_the_variable(value):
    with pytest.raises(SglangConfigError, match=r"sglang_monitoring_retention: .* not a Prometheus duration\. Fix"):
        check_duration("sglang_monitoring_retention", value)


@pytest.mark.parametrize("value", ["abc", "", True, 0, 70000, "30000x"])
def test_a_port_that_is_no_port_is_refused_naming_the_variable_the_host_and_the_type(value):
    with pytest.raises(SglangConfigError, match=r"sglang_service_port: ct200 sets .* not an int from 1 to 65535"):
        port_of("sglang_service_port", "ct200", value)


def test_a_port_given_as_text_is_read_as_its_number():
    assert port_of("sglang_service_port", "ct200", "30000") == 30000
