"""Host facts preflight measures: free disk where the data will land, RAM, OS."""

from __future__ import annotations

import pytest
from ansible.module_utils.specgate.preflight.host_facts import (
    disk_free,
    existing_ancestor,
    parse_meminfo,
    parse_os_release,
)

pytestmark = pytest.mark.host


def test_missing_path_is_measured_on_its_nearest_existing_parent(tmp_path):
    target = tmp_path / "models" / "kimi"
    assert existing_ancestor(str(target)) == tmp_path
    measured = disk_free(str(target))
    assert measured["measured_at"] == str(tmp_path)
    assert 0 < measured["free_mib"] <= measured["total_mib"]


def test_meminfo_total_is_mib():
    assert parse_meminfo("MemTotal:       24563212 kB\nMemFree: 1 kB\n") == 23987
    assert parse_meminfo("") is None


def test_os_release_quoted_values_are_unquoted():
    text = 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\nVERSION_ID="12"\n'
    assert parse_os_release(text) == {
        "os_id": "debian",
        "os_version_id": "12",
        "os_pretty_name": "Debian GNU/Linux 12 (bookworm)",
    }
