"""The module payloads ansible builds for the hosts are kept from one run to the next
(specgate.project.ansiballz_cache), and never one built from sources that changed since; they carry the bytecode of
their sources, which a host of the controller's Python runs; and a local module never reads its payload unbuffered.

Each run here is a real ansible-playbook with the project's ansible.cfg, a library of the test's own, a local temp
directory of its own (as the tests' runs have: the cache is shared whatever each run's temp directory is) and the
test's cache directory (SPECGATE_ANSIBALLZ_CACHE; unset, the project's .cache/ansiballz)."""

from __future__ import annotations

import base64
import importlib.util
import io
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from ansible.executor.module_common import _CachedModule

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "local_collections/ansible_collections/specgate/project/plugins/callback/ansiballz_cache.py"
MODULE = """#!/usr/bin/python
import os

from ansible.module_utils import errors
from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(argument_spec={}, supports_check_mode=True)
    module.deprecate("the probe's word is old", version="9.0")
    module.exit_json(changed=False, said="WORD", errors_from=os.path.splitext(errors.__file__)[1],
                     unbuffered=os.environ.get("PYTHONUNBUFFERED", "unset"))


if __name__ == "__main__":
    main()
"""
PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  tasks:
    - {name: Run the library's module, probe_word: {}, register: probe}
    - name: Say what it said, where its module_utils came from and whether its Python read the payload unbuffered
      ansible.builtin.debug:
        msg: "said={{ probe.said }} errors_from={{ probe.errors_from }} unbuffered={{ probe.unbuffered }}"
"""


def _write_module(tmp_path: Path, word: str) -> None:
    (tmp_path / "library").mkdir(exist_ok=True)
    (tmp_path / "library" / "probe_word.py").write_text(MODULE.replace("WORD", word))


def _run(tmp_path: Path) -> str:
    env = {
        **os.environ,
        "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
        "ANSIBLE_FACT_CACHING": "memory",
        "ANSIBLE_LIBRARY": str(tmp_path / "library"),
        "SPECGATE_ANSIBALLZ_CACHE": str(tmp_path / "cache"),
        "ANSIBLE_LOCAL_TEMP": str(tmp_path / f"local-{time.monotonic_ns()}"),
        # As CI runners and container images often set it: the callback keeps it from the modules' Pythons.
        "PYTHONUNBUFFERED": "1",
    }
    run = subprocess.run(
        ["ansible-playbook", "-vvv", "-i", "localhost,", "-c", "local",
         "-e", f"ansible_python_interpreter={sys.executable}", str(tmp_path / "play.yml")],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    return run.stdout + run.stderr  # ansible's warnings go to stderr


def _shared(tmp_path: Path) -> list[Path]:
    return sorted(p for p in (tmp_path / "cache").glob("ansiballz-*") if p.is_dir())


def test_a_payload_is_reused_by_the_next_run_and_rebuilt_once_its_module_changed(tmp_path):
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    _write_module(tmp_path, "one")
    # Its module_utils came from the bytecode (the module is local: its Python is this one), and its Python read the
    # payload buffered whatever the controller's environment says. The module's deprecation names it and the version,
    # as ansible names them from the calling file (a file that deprecates keeps its source).
    out = _run(tmp_path)
    assert "said=one errors_from=.pyc unbuffered=unset" in out
    assert "removed from module 'probe_word' in collection 'ansible.legacy' version 9.0" in " ".join(out.split())
    (shared,) = _shared(tmp_path)
    (payload,) = [p for p in shared.glob("ansible.legacy.probe_word-*") if p.suffix != ".lock"]
    built = payload.stat()

    # Nothing changed: the next run reads the payload the first one built.
    assert "said=one" in _run(tmp_path)
    assert _shared(tmp_path) == [shared]
    again = payload.stat()
    assert (again.st_ino, again.st_mtime_ns) == (built.st_ino, built.st_mtime_ns)

    # Stored with the bytecode of each of its sources.
    zipped = zipfile.ZipFile(io.BytesIO(base64.b64decode(_CachedModule.load(str(payload)).zip_data)))
    sources = {name for name in zipped.namelist() if name.endswith(".py")}
    assert "ansible/module_utils/basic.py" in sources
    compiled = {name for name in zipped.namelist() if name.endswith(".pyc")}
    assert "ansible/module_utils/errors.pyc" in compiled
    assert compiled < {f"{name}c" for name in sources}
    assert "ansible/module_utils/basic.pyc" not in compiled  # it raises deprecations
    assert "ansible/legacy/probe_word.pyc" not in compiled  # it too

    # Same size, new content: another digest, a payload built from the new source, and what it runs is the new one.
    time.sleep(0.01)
    _write_module(tmp_path, "two")
    assert "said=two" in _run(tmp_path)
    assert len(_shared(tmp_path)) == 2


def test_cache_directories_unused_for_a_week_are_removed_and_recent_ones_kept(tmp_path):
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    _write_module(tmp_path, "one")
    (tmp_path / "cache").mkdir()
    old, recent = tmp_path / "cache" / "ansiballz-old", tmp_path / "cache" / "ansiballz-recent"
    for path, days in ((old, 8), (recent, 1)):
        path.mkdir()
        (path / "payload").write_text("x")
        stamp = time.time() - days * 24 * 3600
        os.utime(path, (stamp, stamp))
    assert "said=one" in _run(tmp_path)
    assert not old.exists()
    assert recent.exists()


def test_a_cache_directory_that_cannot_be_made_leaves_the_run_to_ansibles_own_cache(tmp_path):
    """Where the shared directory's name is taken by a file, the run builds its payloads as ansible does alone."""
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    _write_module(tmp_path, "one")
    _run(tmp_path)
    (shared,) = _shared(tmp_path)
    for payload in shared.iterdir():
        payload.unlink()
    shared.rmdir()
    shared.write_text("not a directory")
    out = _run(tmp_path)
    assert "said=one" in out
    assert "specgate.project.ansiballz_cache: not shared" in out
    assert shared.read_text() == "not a directory"


def test_a_cache_directory_this_user_cannot_write_is_refused_before_any_run_uses_it(tmp_path, monkeypatch):
    """A checkout another account made: ansible would fail the first task whose payload is missing there, so the
    callback says OSError (its caller then keeps ansible's own cache, as the test above shows). Root may write
    anywhere, so the user's view is os.access's, asked here for a user who may not."""
    spec = importlib.util.spec_from_file_location("ansiballz_cache_under_test", PLUGIN)
    plugin = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plugin)
    assert plugin.shared_dir(tmp_path, "k1") == tmp_path / "ansiballz-k1"
    monkeypatch.setattr(plugin.os, "access", lambda path, mode: False)
    with pytest.raises(PermissionError, match="not writable by this user"):
        plugin.shared_dir(tmp_path, "k1")
