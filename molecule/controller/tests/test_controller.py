"""After the controller bootstrap's install-and-configure part on a bare Debian 12: podman runs systemd hosts here."""

from __future__ import annotations

import json

import pytest

testinfra_hosts = ["podman://specgate-controller"]

DROP_IN = "/etc/containers/containers.conf.d/specgate.conf"


@pytest.mark.parametrize("package", ["podman", "runc", "debootstrap", "openssh-client"])
def test_the_container_runtime_and_image_builder_are_installed(host, package: str) -> None:
    assert host.package(package).is_installed


def test_the_drop_in_runs_containers_with_runc_and_no_default_ulimits(host) -> None:
    drop_in = host.file(DROP_IN)
    assert drop_in.is_file
    assert (drop_in.user, drop_in.group, drop_in.mode) == ("root", "root", 0o644)
    assert 'runtime = "runc"' in drop_in.content_string
    assert "default_ulimits = []" in drop_in.content_string
    directory = host.file("/etc/containers/containers.conf.d")
    assert (directory.user, directory.mode) == ("root", 0o755)


def test_podman_reads_the_drop_in(host) -> None:
    # podman's merged configuration, as podman itself resolves it: the drop-in is found and parsed.
    info = host.run("podman info --format json")
    assert info.rc == 0, info.stderr
    assert json.loads(info.stdout)["host"]["ociRuntime"]["name"] == "runc"


def test_promtool_runs_and_the_prometheus_server_was_not_installed(host) -> None:
    promtool = host.file("/opt/specgate-controller/bin/promtool")
    assert (promtool.user, promtool.mode) == ("root", 0o755)
    assert "promtool, version" in host.run("/opt/specgate-controller/bin/promtool --version").stdout
    assert not host.package("prometheus").is_installed  # unpacked from the package, which would start a server
    # It checks rules files as the tests ask it to.
    check = host.run("printf 'groups: []\\n' > /tmp/r.yml && "
                     "/opt/specgate-controller/bin/promtool check rules /tmp/r.yml")
    assert check.rc == 0, check.stdout + check.stderr
