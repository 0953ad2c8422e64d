"""A multi-node deployment's nodes (node_topology): rank order, rank 0's rendezvous address, and the flags each node
runs with; every refusal names the sglang_service_* variable and the fix."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from ansible.module_utils.specgate.common.engine import SglangConfigError
from ansible.module_utils.specgate.service.node_topology import (
    NodeSettings,
    Replica,
    group_flags,
    node_flags,
    node_ranks,
    rank_flags,
    replicas,
    topology,
)
from sglang_nodes import FilterModule

PAIR = ["h100-a", "h100-b"]
ADDRESSES = {"h100-a": "10.0.0.1", "h100-b": "10.0.0.2"}
SETTINGS = NodeSettings(nodes_group="kimi_h100_pair")


def pair(settings=SETTINGS, hosts=PAIR, ranks=None, addresses=ADDRESSES):
    return topology(settings, hosts, ranks or {}, addresses)


def test_inventory_order_is_node_rank_order():
    assert node_ranks("g", ["b", "a", "c"], {}) == ("b", "a", "c")
    assert node_ranks("g", ["b", "a"], {"a": None, "b": None}) == ("b", "a")


def test_explicit_ranks_on_every_node_reorder_them():
    assert node_ranks("g", ["b", "a", "c"], {"a": 0, "b": "2", "c": 1}) == ("a", "c", "b")


def test_a_rank_set_on_some_nodes_only_is_refused_naming_the_rest():
    with pytest.raises(SglangConfigError, match=r"^sglang_service_node_rank: set on a but not on b, c"):
        node_ranks("g", ["a", "b", "c"], {"a": 0})


@pytest.mark.parametrize("ranks", [{"a": 0, "b": 0}, {"a": 1, "b": 2}, {"a": 0, "b": 5}])
def test_ranks_that_are_not_0_to_n_minus_1_once_each_are_refused(ranks):
    with pytest.raises(SglangConfigError, match=r"sglang_service_node_rank: .* not 0\.\.1, each once"):
        node_ranks("g", ["a", "b"], ranks)


@pytest.mark.parametrize("value", [-1, "first", 1.5, True])
def test_a_rank_that_is_not_a_whole_number_is_refused(value):
    with pytest.raises(SglangConfigError, match=r"sglang_service_node_rank: b sets .*not a node rank"):
        node_ranks("g", ["a", "b"], {"a": 0, "b": value})


def test_a_group_of_one_host_is_refused_pointing_at_single_host_serving():
    with pytest.raises(SglangConfigError, match=r"sglang_service_nodes_group: .* has 1 host\(s\).*set .* to null"):
        node_ranks("solo", ["a"], {})


def test_a_host_listed_twice_is_refused():
    with pytest.raises(SglangConfigError, match="lists a host twice"):
        node_ranks("g", ["a", "a"], {})


def test_dist_init_addr_is_rank_0s_address_and_port():
    topo = pair(ranks={"h100-a": 1, "h100-b": 0})
    assert topo.nodes == ("h100-b", "h100-a")
    assert topo.dist_init_addr == "10.0.0.2:25000"
    assert pair(NodeSettings(nodes_group="g", dist_init_host="fabric-0", dist_init_port=5000)).dist_init_addr == (
        "fabric-0:5000"
    )


def test_an_ipv6_rendezvous_is_bracketed_as_sglang_parses_it():
    # srt/utils/network.py::NetworkAddress.parse refuses a bare IPv6 host:port
    assert pair(addresses={"h100-a": "fd00::1"}).dist_init_addr == "[fd00::1]:25000"


def test_the_rendezvous_splits_back_into_the_host_a_node_connects_to_and_its_port():
    assert pair(ranks={"h100-a": 1, "h100-b": 0}).rendezvous == ("10.0.0.2", 25000)
    assert pair(addresses={"h100-a": "fd00::1"}).rendezvous == ("fd00::1", 25000)


def test_without_an_address_the_inventory_name_is_used():
    assert pair(addresses={}).dist_init_addr == "h100-a:25000"


def test_each_node_gets_the_same_group_flags_and_its_own_rank():
    topo = pair()
    shared = {"nnodes": 2, "dist-init-addr": "10.0.0.1:25000", "dist-timeout": 3600, "gated-launch-port": 25100}
    assert group_flags(topo, "0.5.23") == shared
    assert node_flags(topo, "h100-a", "0.5.23") == {**shared, "node-rank": 0}
    assert node_flags(topo, "h100-b", "0.5.23") == {**shared, "node-rank": 1}
    assert rank_flags(topo, "h100-b") == {"node-rank": 1}


def test_the_gated_launch_port_is_rendered_only_where_the_engine_has_it():
    topo = pair()
    assert "gated-launch-port" in group_flags(topo, "0.5.19")
    assert "gated-launch-port" not in group_flags(topo, "0.5.15")
    assert "gated-launch-port" not in group_flags(topo, "0.5.11")
    off = pair(NodeSettings(nodes_group="g", gated_launch_port=None, dist_timeout=None))
    assert group_flags(off, "0.5.23") == {"nnodes": 2, "dist-init-addr": "10.0.0.1:25000"}


def test_a_host_outside_the_group_is_refused():
    with pytest.raises(SglangConfigError, match=r"sglang_service_nodes_group: other is not a node of group"):
        rank_flags(pair(), "other")


@pytest.mark.parametrize(
    ("changes", "variable"),
    [
        ({"dist_init_port": 30000}, "sglang_service_dist_init_port"),
        ({"dist_init_port": 70000}, "sglang_service_dist_init_port"),
        ({"gated_launch_port": 25000}, "sglang_service_gated_launch_port"),
        ({"gated_launch_port": 30000}, "sglang_service_gated_launch_port"),
        ({"gated_launch_port": 0}, "sglang_service_gated_launch_port"),
        ({"dist_timeout": 0}, "sglang_service_dist_timeout"),
        ({"dist_timeout": "1h"}, "sglang_service_dist_timeout"),
        ({"nodes_group": None}, "sglang_service_nodes_group"),
    ],
)
def test_bad_settings_are_refused_naming_the_variable_and_a_fix(changes, variable):
    settings = NodeSettings(**{"nodes_group": "g", **changes})
    with pytest.raises(SglangConfigError) as raised:
        pair(settings)
    assert str(raised.value).startswith(f"{variable}: ")
    assert "Fix:" in str(raised.value) or "not set" in str(raised.value)


def test_filters_render_a_pair_from_hostvars():
    filters = FilterModule().filters()
    hostvars = {"h100-a": {"ansible_host": "10.0.0.1", "sglang_service_node_rank": 1},
                "h100-b": {"ansible_host": "10.0.0.2", "sglang_service_node_rank": 0}}
    # as Ansible templates the role's variables: numbers may come as strings
    settings = {"nodes_group": "kimi_h100_pair", "dist_init_port": "26000", "dist_timeout": 1800, "port": "30000",
                "gated_launch_port": 26100, "dist_init_host": None}
    topo = filters["sglang_node_topology"](settings, hostvars, PAIR)
    assert topo["nodes"] == ["h100-b", "h100-a"]
    assert topo["dist_init_addr"] == "10.0.0.2:26000"
    assert (topo["dist_init_host"], topo["dist_init_port"]) == ("10.0.0.2", 26000)
    assert filters["sglang_node_flags"](topo, "h100-a", "0.5.23") == {
        "nnodes": 2, "dist-init-addr": "10.0.0.2:26000", "dist-timeout": 1800, "gated-launch-port": 26100,
        "node-rank": 1,
    }
    with pytest.raises(AnsibleFilterError, match="sglang_service_node_rank"):
        filters["sglang_node_topology"](settings, {"h100-a": {"sglang_service_node_rank": 0}}, PAIR)
    assert filters["sglang_node_topology_refusal"](settings, hostvars, PAIR) == ""
    refusal = filters["sglang_node_topology_refusal"]({**settings, "dist_timeout": "an hour"}, hostvars, PAIR)
    assert refusal.startswith("sglang_service_dist_timeout: 'an hour' is not a whole number")
    off = filters["sglang_node_topology"]({**settings, "gated_launch_port": "", "dist_timeout": None}, hostvars, PAIR)
    assert (off["gated_launch_port"], off["dist_timeout"]) == (None, None)
    refusal = filters["sglang_node_topology_refusal"]({**settings, "dist_init_port": ""}, hostvars, PAIR)
    assert refusal.startswith("sglang_service_dist_init_port: '' is not a whole number")


def test_the_group_flags_filter_is_the_same_on_every_node_and_the_rank_filter_differs():
    filters = FilterModule().filters()
    hostvars = {"h100-a": {"ansible_host": "10.0.0.1"}, "h100-b": {"ansible_host": "10.0.0.2"}}
    topo = filters["sglang_node_topology"]({"nodes_group": "kimi_h100_pair"}, hostvars, PAIR)
    shared = filters["sglang_node_group_flags"](topo, "0.5.23")
    assert "node-rank" not in shared
    assert shared["nnodes"] == 2
    assert [filters["sglang_node_rank_flags"](topo, host) for host in PAIR] == [{"node-rank": 0}, {"node-rank": 1}]
    with pytest.raises(AnsibleFilterError, match="not a node of group"):
        filters["sglang_node_rank_flags"](topo, "elsewhere")
    with pytest.raises(AnsibleFilterError, match="sglang_env_packages"):
        filters["sglang_node_group_flags"](topo, "0.4.0")


GROUPED = {"b": {"sglang_service_nodes_group": "pair"}, "a": {"sglang_service_nodes_group": "pair"}}


def test_the_fleets_replicas_are_single_hosts_and_whole_node_groups_in_the_order_they_first_come():
    found = replicas(["solo", "b", "late", "a"], GROUPED, {"pair": ["b", "a"]})
    assert found == [Replica("solo", ("solo",)), Replica("pair", ("b", "a")), Replica("late", ("late",))]
    assert [(r.rank0, r.label) for r in found] == [("solo", "solo"), ("b", "pair (b, a)"), ("late", "late")]


def test_a_replica_holds_every_node_of_its_group_in_rank_order_even_those_a_limit_left_out():
    ranked = {"a": {**GROUPED["a"], "sglang_service_node_rank": 0},
              "b": {**GROUPED["b"], "sglang_service_node_rank": 1}}
    assert replicas(["b"], ranked, {"pair": ["b", "a"]}) == [Replica("pair", ("a", "b"))]


def test_a_replica_whose_group_cannot_be_ranked_is_refused_naming_the_variable():
    with pytest.raises(SglangConfigError, match=r"^sglang_service_nodes_group: group 'pair' has 1 host"):
        replicas(["a"], GROUPED, {"pair": ["a"]})


def test_the_router_gets_one_worker_per_replica_a_node_groups_at_rank_0():
    from sglang_router import sglang_router_replica_urls

    hostvars = {**GROUPED, "solo": {"ansible_host": "10.0.0.9", "sglang_service_port": 30001},
                "a": {**GROUPED["a"], "ansible_host": "10.0.0.1"}, "b": {**GROUPED["b"], "ansible_host": "10.0.0.2"}}
    urls = sglang_router_replica_urls(["a", "b", "solo"], hostvars, {"pair": ["b", "a"]}, 30000)
    assert urls == ["http://10.0.0.2:30000", "http://10.0.0.9:30001"]
    with pytest.raises(AnsibleFilterError, match="group 'pair' has 1 host"):
        sglang_router_replica_urls(["a"], hostvars, {"pair": ["a"]}, 30000)
