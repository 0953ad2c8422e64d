"""filter_plugins/sglang_monitoring.py's URL of the monitor's Prometheus, as the fleet report's timeline reaches it."""

from __future__ import annotations

import pytest
from sglang_monitoring import sglang_monitoring_prometheus_url


@pytest.mark.parametrize(
    ("groups", "hostvars", "url"),
    [
        ({"sglang_monitors": ["mon1"], "sglang_routers": ["lb1"]}, {"mon1": {"ansible_host": "10.0.0.5"}},
         "http://10.0.0.5:9090"),
        ({"sglang_routers": ["lb1"]}, {"lb1": {"ansible_host": "10.0.0.9", "sglang_monitoring_prometheus_port": 36060}},
         "http://10.0.0.9:36060"),
        ({"sglang_routers": ["lb1"]}, {"lb1": {"ansible_host": "lb1", "sglang_monitoring_scrape_address": "127.0.0.1"}},
         "http://127.0.0.1:9090"),
        ({"sglang_monitors": ["mon1"]}, {"mon1": {"ansible_host": "fd00::5"}}, "http://[fd00::5]:9090"),
        ({"sglang_hosts": ["ct200"]}, {}, ""),
    ],
    ids=["monitor-group", "router-host", "scrape-address", "ipv6", "no-monitor"],
)
def test_the_monitors_prometheus_is_reached_as_the_monitor_play_picks_it(groups, hostvars, url):
    assert sglang_monitoring_prometheus_url(groups, hostvars, 9090) == url
