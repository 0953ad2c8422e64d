"""After deploy.yml: the host serves the gated release, and every stage left its real state behind.

Shared by the scenarios that deploy the demo settings by different paths (default: an ordinary user over SSH
with sudo; debian13: root over podman), so both are held to the same state. Each names its service port in the
verifier's environment; the host is inspected as root through podman, whichever path deployed it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx
import pytest

INSTANCE = f"specgate-{os.environ['MOLECULE_SCENARIO_NAME']}"
testinfra_hosts = [f"podman://{INSTANCE}"]

PORT = int(os.environ["SPECGATE_VERIFY_SERVICE_PORT"])
BASE = "/opt/specgate"
API_KEY = "sk-specgate-demo"


def _journal(host, unit: str = "sglang") -> str:
    return host.run(f"journalctl -u {unit} --no-pager -n 40").stdout


def _http(path: str, key: str | None = None) -> httpx.Response:
    # Host networking: the container's port is the controller's loopback port.
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.get(f"http://127.0.0.1:{PORT}{path}", headers=headers, timeout=10)


def test_service_runs_as_the_dedicated_user(host) -> None:
    service = host.service("sglang")
    assert service.is_running, _journal(host)
    assert service.is_enabled
    props = service.systemd_properties
    assert props["User"] == "sglang"
    assert props["NoNewPrivileges"] == "yes"


def test_server_is_healthy_and_needs_the_api_key(host) -> None:
    assert _http("/health").status_code == 200, _journal(host)
    assert _http("/server_info").status_code == 401
    response = _http("/server_info", API_KEY)
    assert response.status_code == 200
    info = response.json()
    assert info["speculative_algorithm"] == "DFLASH"
    assert info["model_path"].startswith("/models/")


def test_active_release_is_known_good_and_carries_its_passing_gate(host) -> None:
    active = host.file(f"{BASE}/active")
    known_good = host.file(f"{BASE}/known-good")
    assert active.is_symlink
    assert known_good.is_symlink
    assert active.linked_to == known_good.linked_to
    gate = json.loads(host.file(f"{active.linked_to}/gate.json").content_string)
    assert gate["action"] == "promote"
    assert gate["analysis"]["phase"] == "Successful"


def test_the_node_exporter_textfile_says_what_serves_and_what_its_gate_measured(host) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    prom = host.file("/var/lib/prometheus/node-exporter/specgate.prom")
    assert (prom.user, prom.group, prom.mode) == ("root", "root", 0o644)
    release = Path(host.file(f"{BASE}/active").linked_to).name
    samples = {s.name: s for family in text_string_to_metric_families(prom.content_string) for s in family.samples}
    assert samples["specgate_release_info"].labels["release"] == release
    assert samples["specgate_release_info"].labels["known_good"] == "true"
    assert samples["specgate_release_info"].labels["algorithm"] == "DFLASH"
    gate = json.loads(host.file(f"{BASE}/releases/{release}/gate.json").content_string)
    (accept,) = [m for m in gate["analysis"]["metrics"] if m["name"] == "accept_length"]
    assert samples["specgate_gate_accept_length"].value == pytest.approx(accept["interval"]["mean"])
    assert samples["specgate_gate_passed"].value == 1.0


def test_gate_report_of_the_active_release_reached_the_controller(host) -> None:
    # The active release's own report, not any gate.md an earlier run left under reports/.
    release = Path(host.file(f"{BASE}/active").linked_to).name
    report = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"]) / "reports" / INSTANCE / release / "gate.md"
    assert report.is_file(), f"no {report}"
    assert report.read_text() == host.file(f"{BASE}/releases/{release}/gate.md").content_string
    assert "Acceptance length" in report.read_text()


def test_cuda_probe_was_compiled_for_the_declared_arch(host) -> None:
    env = host.file("/opt/specgate/cuda/cuda.env")
    assert env.exists
    assert env.mode == 0o644
    content = env.content_string
    assert "CUDA_HOME=" in content
    assert "FLASHINFER_CUDA_ARCH_LIST=12.0a" in content
    assert host.file("/opt/specgate/cuda/probe/probe-sm_120a.cubin").size > 0


def test_service_venv_records_the_engine_package(host) -> None:
    pip = host.run(f"{BASE}/venv/bin/python -m pip show specgate-sim")
    assert pip.rc == 0
    assert "Version: 0.1.0" in pip.stdout


@pytest.mark.parametrize("repo", ["kimi-k26-tiny", "kimi-k26-dflash-b8"])
def test_weights_downloaded_with_a_manifest_owned_by_the_service_user(host, repo: str) -> None:
    found = host.run(f"find /models -maxdepth 3 -name .specgate-manifest.json -path '*{repo}*'").stdout.split()
    assert found, host.run("find /models -maxdepth 3").stdout
    manifest = host.file(found[0])
    assert manifest.user == "sglang"
    files = json.loads(manifest.content_string)["files"]
    assert files, "empty manifest"


def test_no_file_but_the_releases_launch_configs_holds_the_api_key(host) -> None:
    """The benchmark runs as an async job of the service user; Ansible cannot remove such a job's temp dir when it
    connected as another user, so its arguments stayed on the host (issue 29: the key in 57 leftover
    /var/tmp/ansible-tmp-*/AnsiballZ_spec_bench.py files). The key is read on the host instead: nothing but the
    config SGLang launches from may hold it, in the temp dirs, homes, /opt and /var (logs: the service test)."""
    found = host.run(
        # the venvs (packages only) are left out: they are most of the bytes and never written by a run
        "find /tmp /var/tmp /root /home /opt /var/cache /var/lib -xdev -name 'venv*' -prune "
        f"-o -type f -size -8M -exec grep -l -F -e '{API_KEY}' {{}} + 2>/dev/null"
    ).stdout.split()
    launch_configs = [path for path in found if path.startswith(f"{BASE}/releases/") and path.endswith("/launch.yaml")]
    assert sorted(set(found) - set(launch_configs)) == []
    assert launch_configs  # the search reaches where the key is
