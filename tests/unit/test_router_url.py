"""The router's URL as its own host reaches it: one builder (router_client.local_router_url, the
sglang_router_local_url filter) for the router role and for fleet_rollout's calls to a fleet's router."""

from __future__ import annotations

import pytest
from ansible.module_utils.specgate.fleet.router_client import local_router_url, normalize_url

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
