"""One HTTP request without raising: the one client of every host-side call specgate makes to an engine, a router or
a replica's /metrics.

A refused, reset or timed-out connection comes back as ``error``, an HTTP error status as ``status`` with its body.
A URL on this machine's loopback never goes through a proxy: urllib honours http_proxy/HTTP_PROXY and bypasses only
what no_proxy lists, so on a host with a proxy set a check of 127.0.0.1 would ask the proxy about *its* loopback.
Any other host keeps the environment's proxies, read at each request.

Not ansible.module_utils.urls.open_url: it installs its opener for the whole process (urls.py Request.open calls
urllib.request.install_opener), so one call through a proxy re-routed every later urllib.request.urlopen of that
process through that proxy (CI caught it: the sim harness's health checks went to a test's closed proxy). Each
request here builds its own opener and leaves the process's alone.
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# Loopback: an opener without proxies, whatever the environment says.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@dataclass(frozen=True)
class HttpAnswer:
    """What one request got: ``status`` (None when no HTTP answer came), the body, and why not when it failed."""

    status: int | None
    body: bytes = b""
    error: str | None = None

    def json(self) -> Any:
        """The body as JSON; None when it is not JSON."""
        try:
            return json.loads(self.body or b"null")
        except ValueError:
            return None

    def describe(self) -> str:
        if self.status is None:
            return self.error or "no answer"
        text = self.body.decode("utf-8", "replace").strip()
        return f"HTTP {self.status}" + (f" {text[:300]}" if text else "")


# A server listening on every address is reached on loopback from its own host.
WILDCARD_LISTEN = ("0.0.0.0", "::", "")


def host_port(host: str, port: int | str) -> str:
    """``host:port`` as a URL and SGLang's --dist-init-addr write it (srt/utils/network.py::NetworkAddress.parse): an
    IPv6 address in brackets (``fd00::5:30000`` is neither), a name or IPv4 address as it is. The port as given."""
    host = str(host).strip()
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"{host}:{port}"


def local_url(listen_host: str | None, port: int | str) -> str:
    """The URL a server's own host reaches it on, from the address it listens on: loopback for a wildcard address
    (0.0.0.0, ::), an IPv6 address in brackets, a name or IPv4 address as it is. The one builder of every such URL:
    the engine's, the router's and Prometheus's (the specgate_local_url filter)."""
    host = (listen_host or "").strip()
    return f"http://{host_port('127.0.0.1' if host in WILDCARD_LISTEN else host, int(port))}"


def is_loopback_url(url: str) -> bool:
    """True when the URL's host is this machine's loopback (localhost, 127.0.0.0/8, ::1)."""
    host = (urllib.parse.urlsplit(url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def request(method: str, url: str, body: bytes | None = None, headers: Mapping[str, str] | None = None,
            timeout: float = 10.0) -> HttpAnswer:  # fmt: skip
    """``method`` on ``url`` once; loopback direct, elsewhere through the environment's proxies."""
    opener = _DIRECT if is_loopback_url(url) else urllib.request.build_opener()
    try:
        with opener.open(urllib.request.Request(url, data=body, headers=dict(headers or {}), method=method),
                         timeout=timeout) as response:  # fmt: skip
            return HttpAnswer(response.status, response.read())
    except urllib.error.HTTPError as exc:
        return HttpAnswer(exc.code, exc.read() if exc.fp else b"")
    except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return HttpAnswer(None, b"", f"{type(reason).__name__}: {reason}")
