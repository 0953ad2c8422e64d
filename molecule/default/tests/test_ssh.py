"""What only the SSH path shows: Ansible logged in as an ordinary user, became root through sudo for the host work,
and became the service user for the benchmark and the coding eval."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import testinfra

testinfra_hosts = [f"podman://specgate-{os.environ['MOLECULE_SCENARIO_NAME']}"]

USER = os.environ["SPECGATE_VERIFY_SSH_USER"]
PORT = int(os.environ["SPECGATE_VERIFY_SSH_PORT"])
KEY = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "id_ed25519"
BASE = "/opt/specgate"


@pytest.fixture(scope="module")
def over_ssh():
    """The host as Ansible reached it: SSH on loopback with the scenario's key, as the ordinary user."""
    return testinfra.get_host(
        f"ssh://{USER}@127.0.0.1:{PORT}",
        ssh_identity_file=str(KEY),
        ssh_extra_args="-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes",
    )


def test_ansible_logged_in_as_an_ordinary_user_with_passwordless_sudo(over_ssh) -> None:
    assert over_ssh.user().name == USER
    assert over_ssh.user().uid != 0
    assert over_ssh.run("sudo -n true").rc == 0
    # Without sudo that user cannot touch what the deploy wrote: the roles did need become.
    assert over_ssh.run(f"touch {BASE}/releases/.probe").rc != 0


def test_root_cannot_log_in_over_ssh() -> None:
    root = testinfra.get_host(
        f"ssh://root@127.0.0.1:{PORT}",
        ssh_identity_file=str(KEY),
        ssh_extra_args="-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes",
    )
    # testinfra's SSH backend raises with ssh's own words when it cannot log in.
    with pytest.raises(RuntimeError, match="Permission denied"):
        root.run("true")


def test_privileged_work_went_through_sudo_as_root_and_the_benchmark_as_the_service_user(host) -> None:
    # sudo logs every command to the journal as "<user> : ... USER=<target> ; COMMAND=...".
    log = host.run("journalctl _COMM=sudo --no-pager -o cat").stdout
    as_root = [line for line in log.splitlines() if line.startswith(f"{USER} :") and "USER=root" in line]
    as_service = [line for line in log.splitlines() if line.startswith(f"{USER} :") and "USER=sglang" in line]
    assert as_root, log[-2000:]
    assert as_service, log[-2000:]


def test_the_benchmark_and_coding_eval_ran_as_the_service_user(host) -> None:
    active = host.file(f"{BASE}/active").linked_to
    gate = json.loads(host.file(f"{active}/gate.json").content_string)
    sglang = host.user("sglang")
    assert gate["runner"] == {"user": "sglang", "uid": sglang.uid}
    assert sglang.uid != 0


def test_bench_yml_over_ssh_benchmarked_the_active_release_as_the_service_user(host) -> None:
    active = host.file(f"{BASE}/active").linked_to
    bench = host.file(f"{active}/bench.json")
    assert bench.is_file, "bench.yml (side_effect.yml) left no bench.json in the active release"
    result = json.loads(bench.content_string)
    assert result["runner"]["user"] == "sglang"
    assert result["runs"], result
