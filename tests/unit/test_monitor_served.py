"""monitor/served.py: what a host serves, read in one pass (pointers, server.yaml, gate.json) on the host."""

from __future__ import annotations

from pathlib import Path

import pytest
from ansible.module_utils.specgate.monitor.served import ServedReleaseError, read_served

pytestmark = pytest.mark.host


def release(base: Path, release_id: str, server: str | None = "speculative-algorithm: DFLASH\n",
            gate: str | None = '{"action": "promote"}') -> Path:
    directory = base / "releases" / release_id
    directory.mkdir(parents=True)
    if server is not None:
        (directory / "server.yaml").write_text(server)
    if gate is not None:
        (directory / "gate.json").write_text(gate)
    return directory


def test_the_pointers_and_the_served_releases_records_are_read_as_text(tmp_path: Path) -> None:
    (tmp_path / "active").symlink_to(release(tmp_path, "dflash-bs8-0123456789"))
    (tmp_path / "known-good").symlink_to(release(tmp_path, "nospec-9876543210", gate=None))
    assert read_served(str(tmp_path)) == {"active": "dflash-bs8-0123456789", "known_good": "nospec-9876543210",
                                          "server_yaml": "speculative-algorithm: DFLASH\n",
                                          "gate_json": '{"action": "promote"}'}


def test_a_release_never_gated_has_no_gate_record(tmp_path: Path) -> None:
    (tmp_path / "active").symlink_to(release(tmp_path, "r-1", gate=None))
    served = read_served(str(tmp_path))
    assert (served["active"], served["known_good"], served["gate_json"]) == ("r-1", "", None)


def test_a_host_serving_nothing_yet_reads_as_empty(tmp_path: Path) -> None:
    assert read_served(str(tmp_path)) == {"active": "", "known_good": "", "server_yaml": None, "gate_json": None}


def test_an_active_release_without_its_server_config_is_refused_naming_it(tmp_path: Path) -> None:
    (tmp_path / "active").symlink_to(release(tmp_path, "r-1", server=None))
    with pytest.raises(ServedReleaseError, match=r"release r-1, whose server\.yaml is missing .* Fix: roll back"):
        read_served(str(tmp_path))
