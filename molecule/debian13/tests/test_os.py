"""The Debian 13 host is what it claims to be: the scenario proves nothing about trixie if it ran on bookworm."""

from __future__ import annotations

testinfra_hosts = ["podman://specgate-debian13"]


def test_the_host_runs_debian_13_with_its_own_python(host) -> None:
    assert host.system_info.distribution == "debian"
    assert host.system_info.release.startswith("13")
    assert host.run("python3 -c 'import sys; print(sys.version_info[:2])'").stdout.strip() == "(3, 13)"


def test_the_service_venv_runs_on_the_hosts_python_3_13(host) -> None:
    version = host.run("/opt/specgate/venv/bin/python -c 'import sys; print(sys.version_info[:2])'")
    assert version.rc == 0, version.stderr
    assert version.stdout.strip() == "(3, 13)"
