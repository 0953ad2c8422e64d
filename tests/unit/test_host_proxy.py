"""A host with a proxy set (http_proxy, HTTP_PROXY, no_proxy empty): checks of the engine on loopback still reach the
engine directly; the proxy, a listening socket that would answer 502, gets no connection from them."""

from __future__ import annotations

import asyncio
import http.server
import json

import pytest
from ansible.module_utils.specgate.common.http import is_loopback_url
from ansible.module_utils.specgate.fleet.bake import http_scraper
from ansible.module_utils.specgate.fleet.router_client import RouterClient
from ansible.module_utils.specgate.gate.bench_client import Client
from ansible.module_utils.specgate.gate.sglang_crosscheck import loopback_unproxied
from ansible.module_utils.specgate.service.readiness import fetch_server_info, http_get, probe_health
from loopback_engine import LoopbackEngine, RecordingProxy, serving

pytestmark = pytest.mark.host

PROXY_VARIABLES = ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY")


@pytest.fixture
def proxy(monkeypatch):
    with RecordingProxy() as recording:
        for name in PROXY_VARIABLES:
            monkeypatch.setenv(name, recording.url)
        monkeypatch.setenv("no_proxy", "")
        monkeypatch.setenv("NO_PROXY", "")
        yield recording


class _Engine(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"model_path": "/models/t"}).encode() if self.path == "/server_info" else b"ok"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args):
        return


@pytest.fixture
def engine():
    with serving(_Engine) as url:
        yield url


def test_readiness_checks_of_loopback_go_direct_with_a_proxy_set(proxy, engine):
    assert probe_health(engine + "/health", timeout=5).status == 200
    info, error = fetch_server_info(engine, "k", timeout=5)
    assert error is None
    assert info == {"model_path": "/models/t"}
    assert proxy.connections == 0


def test_the_bake_and_the_router_client_reach_loopback_directly_with_a_proxy_set(proxy, engine):
    assert http_scraper(engine + "/metrics")() == "ok"
    assert RouterClient(engine).readiness().status == 200
    assert proxy.connections == 0


def test_a_request_through_the_proxy_leaves_the_processs_own_urllib_alone(proxy, engine, monkeypatch):
    """One request through the proxy must not re-route this process's later urllib calls (ansible's open_url installs
    its opener process-wide: after it, a plain urlopen of loopback went to the proxy even with the variables gone)."""
    import urllib.request

    assert http_get("http://weights-mirror.example:8080/health", timeout=5)[0] == 502
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name)
    with urllib.request.urlopen(engine + "/health", timeout=5) as answer:
        assert answer.status == 200
    assert proxy.connections == 1


def test_other_hosts_still_go_through_the_proxy(proxy):
    # The fake proxy works, and a non-loopback URL keeps honouring the environment: it answers in the proxy's name.
    status, _body, error = http_get("http://weights-mirror.example:8080/health", timeout=5)
    assert (status, error) == (502, None)
    assert proxy.connections == 1


def test_the_bench_client_reaches_the_loopback_engine_directly_with_a_proxy_set(proxy):
    async def go(base_url: str):
        async with Client(base_url, None, 10.0) as client:
            info = await client.server_info()
            record = await client.generate_stream("hello", 4, 0.0, True)
            return info, record

    with LoopbackEngine() as loopback:
        info, record = asyncio.run(go(loopback.base_url))
    assert info["model_path"] == "/models/t"
    assert record.ok
    assert record.completion_tokens == 4
    assert proxy.connections == 0


@pytest.mark.parametrize(
    ("url", "loopback"),
    [
        ("http://127.0.0.1:30000/health", True),
        ("http://127.8.9.10:30000/health", True),
        ("http://localhost:30000/health", True),
        ("http://[::1]:30000/health", True),
        ("http://10.0.0.5:30000/health", False),
        ("http://localhost.example.com/", False),
        ("http://gpu-box:30000/health", False),
    ],
)
def test_loopback_is_recognised_by_address_and_name(url, loopback):
    assert is_loopback_url(url) is loopback


def test_sglangs_own_benchmark_gets_loopback_added_to_no_proxy():
    env = loopback_unproxied({"no_proxy": "corp.example, 127.0.0.1", "http_proxy": "http://proxy:3128"})
    assert env["no_proxy"] == "corp.example,127.0.0.1,localhost,::1"
    assert env["NO_PROXY"] == "127.0.0.1,localhost,::1"
    assert env["http_proxy"] == "http://proxy:3128"
    assert loopback_unproxied(dict(env)) == env
