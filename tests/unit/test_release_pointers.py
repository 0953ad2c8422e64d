"""Release pointers: which release is active or known-good, read from the symlinks the role keeps."""

from __future__ import annotations

import pytest
from ansible.module_utils.specgate.release_pointers import pointer_target


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
