"""The URL a server's own host reaches it on (common/http.py's local_url, the specgate_local_url filter): one builder
for the engine's URL, the router's and Prometheus's. A wildcard listen address is reached on loopback; an IPv6 address
goes in brackets, as a URL and SGLang's --dist-init-addr need it (host_port)."""

from __future__ import annotations

import pytest
from ansible.module_utils.specgate.common.http import host_port, is_loopback_url, local_url
from ansible.module_utils.specgate.fleet.router_client import normalize_url

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
        (None, 30000, "http://127.0.0.1:30000"),
    ],
)
def test_a_server_is_reached_on_its_listen_address_with_ipv6_in_brackets(listen, port, url):
    assert local_url(listen, port) == url
    assert normalize_url(url) == url  # a URL the router client takes as it is


def test_an_ipv6_loopback_listen_address_makes_a_loopback_url():
    """The engine on ::1 is asked at http://[::1]:port, which the HTTP client sends past any proxy (loopback)."""
    assert is_loopback_url(local_url("::1", 30000))


@pytest.mark.parametrize(
    ("host", "port", "address"),
    [("10.0.0.2", 25000, "10.0.0.2:25000"), ("fabric-0", 5000, "fabric-0:5000"),
     ("fd00::1", 25000, "[fd00::1]:25000"), ("[fd00::1]", 25000, "[fd00::1]:25000")],
)
def test_host_port_brackets_an_ipv6_address_only(host, port, address):
    assert host_port(host, port) == address


def test_a_port_that_is_not_a_number_is_refused():
    with pytest.raises(ValueError, match="30k"):
        local_url("127.0.0.1", "30k")
