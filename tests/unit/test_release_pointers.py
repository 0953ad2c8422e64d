"""Release pointers: which release is active or known-good, read from the symlinks the role keeps."""

from __future__ import annotations

import json
import os

import pytest
from ansible.module_utils.specgate.service.release_pointers import (
    launch_is_newer_than_engine,
    pointer_target,
    release_dirs,
    release_port,
)

pytestmark = pytest.mark.host


@pytest.fixture
def base(tmp_path):
    (tmp_path / "releases" / "dflash-bs8-0123456789").mkdir(parents=True)
    return tmp_path


def test_a_missing_pointer_means_nothing_deployed_yet(base):
    assert pointer_target(str(base), "active") == ""


def test_absolute_and_relative_links_name_the_release(base):
    (base / "active").symlink_to(base / "releases" / "dflash-bs8-0123456789")
    (base / "known-good").symlink_to("releases/dflash-bs8-0123456789")
    assert pointer_target(str(base), "active") == "dflash-bs8-0123456789"
    assert pointer_target(str(base), "known-good") == "dflash-bs8-0123456789"


def test_a_hand_made_directory_in_place_of_the_pointer_is_refused(base):
    (base / "active").mkdir()
    with pytest.raises(ValueError, match="not a symlink"):
        pointer_target(str(base), "active")


def test_a_pointer_outside_the_releases_directory_is_refused(base, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (base / "active").symlink_to(elsewhere)
    with pytest.raises(ValueError, match="outside"):
        pointer_target(str(base), "active")


def test_release_dirs_lists_releases_but_not_stagings_files_or_links(base):
    (base / "releases" / ".staging-dflash-bs16-0123456789-x1").mkdir()
    (base / "releases" / "stray.txt").write_text("x")
    (base / "releases" / "link").symlink_to(base / "releases" / "dflash-bs8-0123456789")
    (base / "releases" / "dflash-bs16-9876543210").mkdir()
    found = release_dirs(str(base))
    assert [entry["path"].rsplit("/", 1)[-1] for entry in found] == ["dflash-bs16-9876543210", "dflash-bs8-0123456789"]
    assert all(entry["mtime"] > 0 for entry in found)


def test_release_dirs_is_empty_before_the_first_deploy(tmp_path):
    assert release_dirs(str(tmp_path)) == []


def test_a_release_names_the_port_it_was_deployed_with(base):
    record = base / "releases" / "dflash-bs8-0123456789" / "release.json"
    record.write_text(json.dumps({"id": "dflash-bs8-0123456789", "identity": {"port": 30001, "tp_size": 8}}))
    assert release_port(str(base), "dflash-bs8-0123456789") == 30001


@pytest.mark.parametrize("content", [None, "{not json", json.dumps({"identity": {}}), json.dumps({"identity": []})])
def test_a_release_that_does_not_say_its_port_reads_as_0(base, content):
    if content is not None:
        (base / "releases" / "dflash-bs8-0123456789" / "release.json").write_text(content)
    assert release_port(str(base), "dflash-bs8-0123456789") == 0


def _launch(base, written_at: float) -> None:
    release = base / "releases" / "dflash-bs8-0123456789"
    (release / "launch.yaml").write_text("api-key: sk-rotated\n")
    os.utime(release / "launch.yaml", (written_at, written_at))
    (base / "active").symlink_to(release)


# The engine started 100 s ago by the monotonic clock (now: wall 10_000, monotonic 500).
NOW_WALL, NOW_MONO, STARTED_US = 10_000.0, 500.0, 400_000_000


def test_a_launch_file_written_after_the_engine_started_is_stale(base):
    _launch(base, written_at=NOW_WALL - 30)  # rewritten 70 s after the start, the restart never came
    assert launch_is_newer_than_engine(str(base), STARTED_US, NOW_WALL, NOW_MONO) is True


def test_the_launch_file_the_engine_read_at_its_start_is_not_stale(base):
    _launch(base, written_at=NOW_WALL - 100.5)  # written, then the old server stopped, then the start
    assert launch_is_newer_than_engine(str(base), STARTED_US, NOW_WALL, NOW_MONO) is False


def test_nothing_is_stale_when_the_engine_does_not_run_or_no_launch_file_is_active(base):
    assert launch_is_newer_than_engine(str(base), STARTED_US, NOW_WALL, NOW_MONO) is False  # no active pointer
    _launch(base, written_at=NOW_WALL - 30)
    assert launch_is_newer_than_engine(str(base), 0, NOW_WALL, NOW_MONO) is False
