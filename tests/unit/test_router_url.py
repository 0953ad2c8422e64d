"""The router's URL as its own host reaches it: one builder (router_client.local_router_url, the
sglang_router_local_url filter) for the router role and for fleet_rollout's calls to a fleet's router."""

from __future__ import annotations

import pytest
from ansible.module_utils.specgate.fleet.router_client import local_router_url, normalize_url, worker_url

pytestmark = pytest.mark.host


@pytest.mark.parametrize(
    ("listen", "port", "url"),
    [
        ("127.0.0.1", 30080, "http://127.0.0.1:30080"),
        ("10.0.0.5", "30080", "http://10.0.0.5:30080"),
        ("router.fleet.internal", 30080, "http://router.fleet.internal:30080"),
        ("fd00::5", 30080, "http://[fd00::5]:30080"),
        ("[fd00::5]", 30080, "http://[fd00::5]:30080"),
        ("::1", 36050, "http://[::1]:36050"),
        ("0.0.0.0", 30080, "http://127.0.0.1:30080"),
        ("::", 30080, "http://127.0.0.1:30080"),
        ("", 30080, "http://127.0.0.1:30080"),
    ],
)
def test_the_router_is_reached_on_its_listen_address_with_ipv6_in_brackets(listen, port, url):
    assert local_router_url(listen, port) == url
    assert normalize_url(url) == url  # a URL the router client takes as it is


@pytest.mark.parametrize(
    ("host_vars", "url"),
    [
        ({}, "http://ct200:30000"),
        ({"ansible_host": "10.0.0.11"}, "http://10.0.0.11:30000"),
        ({"ansible_host": "10.0.0.11", "sglang_service_port": 31000}, "http://10.0.0.11:31000"),
        ({"ansible_host": "fd00::11"}, "http://[fd00::11]:30000"),
        ({"ansible_host": "10.0.0.11", "sglang_router_worker_url": "http://127.0.0.1:36000"}, "http://127.0.0.1:36000"),
    ],
)
def test_a_replica_is_registered_at_its_worker_url_else_its_address_and_engine_port(host_vars, url):
    assert worker_url("ct200", host_vars, 30000) == url
