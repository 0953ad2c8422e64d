"""The test image's mirror is read from the machine's own apt sources, in either format."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "debian_mirror.py"
_spec = importlib.util.spec_from_file_location("debian_mirror", SCRIPT)
debian_mirror = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(debian_mirror)

DEB822 = """Types: deb
URIs: http://mirror.example.test/debian
Suites: bookworm bookworm-updates
Components: main

Types: deb
URIs: http://security.example.test/debian-security
Suites: bookworm-security
Components: main
"""


def test_deb822_sources_give_the_main_suite_mirror(tmp_path: Path) -> None:
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "debian.sources").write_text(DEB822)
    assert debian_mirror.find_mirror(tmp_path, "bookworm") == "http://mirror.example.test/debian"


def test_security_suite_is_not_taken_for_the_release(tmp_path: Path) -> None:
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "debian.sources").write_text(DEB822.split("\n\n")[1])
    assert debian_mirror.find_mirror(tmp_path, "bookworm") is None


def test_one_line_sources_list_without_sources_dir(tmp_path: Path) -> None:
    (tmp_path / "sources.list").write_text(
        "# comment\ndeb-src http://src.example.test/debian bookworm main\n"
        "deb [arch=amd64 signed-by=/k.gpg] http://one.example.test/debian bookworm main\n"
    )
    assert debian_mirror.find_mirror(tmp_path, "bookworm") == "http://one.example.test/debian"


def test_no_source_for_the_suite_is_reported(tmp_path: Path) -> None:
    (tmp_path / "sources.list").write_text("deb http://one.example.test/debian trixie main\n")
    assert debian_mirror.find_mirror(tmp_path, "bookworm") is None
