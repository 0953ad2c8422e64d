"""The URL a router registers a replica at (router_client.worker_url): its own, else its address at its engine port,
an IPv6 address in brackets. The router's own URL is common/http.py's local_url (tests/unit/test_local_url.py)."""

from __future__ import annotations

import pytest
from ansible.module_utils.specgate.fleet.router_client import worker_url

pytestmark = pytest.mark.host


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
