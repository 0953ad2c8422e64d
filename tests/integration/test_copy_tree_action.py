"""specgate_copy_tree on localhost through ansible-runner: a tree is copied once, a re-run with nothing changed sends
nothing, a changed file is copied again, and check mode says a copy is due without making it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import ansible_runner
import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
TASK = "Copy the tree"


def _copy(tmp_path: Path, src: Path, dest: Path, check: bool = False, **extra) -> dict:
    private = tmp_path / f"runner-{len(list(tmp_path.glob('runner-*')))}"
    (private / "project").mkdir(parents=True)
    play = [{"hosts": "localhost", "gather_facts": False,
             "tasks": [{"name": TASK,
                        "specgate_copy_tree": {"src": str(src), "dest": str(dest), "mode": "0644", **extra}}]}]
    (private / "project" / "play.yml").write_text(json.dumps(play))
    run = ansible_runner.run(
        private_data_dir=str(private), playbook="play.yml", quiet=True, cmdline="--check" if check else None,
        inventory=f"localhost ansible_connection=local ansible_python_interpreter={sys.executable}",
        envvars={"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_FACT_CACHING": "memory"},
    )
    (result,) = [{**e["event_data"]["res"], "failed": e["event"] == "runner_on_failed"} for e in run.events
                 if e["event"] in ("runner_on_ok", "runner_on_failed") and e["event_data"].get("task") == TASK]
    return {**result, "stdout": run.stdout.read()}


def test_a_tree_is_copied_once_and_again_only_when_it_changed(tmp_path):
    src, dest = tmp_path / "wheelhouse", tmp_path / "host" / "wheelhouse"
    (src / "sub").mkdir(parents=True)
    (src / "a-1.0-py3-none-any.whl").write_bytes(b"a" * 100)
    (src / "sub" / "b-2.0-py3-none-any.whl").write_bytes(b"b" * 50)

    first = _copy(tmp_path, src, dest, progress_interval=0, batch_bytes=100, directory_mode="0750")
    assert not first["failed"], first
    assert first["changed"] is True, first
    assert first["sent"] == 2
    # How far the copy got, printed while it runs (here after every archive but the last: one file each).
    assert "[localhost] wheelhouse: 1/2 files, 0.00 of 0.00 GB" in first["stdout"], first["stdout"]
    # The modes asked for, and each file's modification second, as the controller's.
    assert (dest / "sub").stat().st_mode & 0o7777 == 0o750
    assert (dest / "sub" / "b-2.0-py3-none-any.whl").stat().st_mode & 0o7777 == 0o644
    assert int((dest / "sub" / "b-2.0-py3-none-any.whl").stat().st_mtime) == int(
        (src / "sub" / "b-2.0-py3-none-any.whl").stat().st_mtime)
    assert (dest / "sub" / "b-2.0-py3-none-any.whl").read_bytes() == b"b" * 50
    manifest = json.loads((dest / ".specgate-tree.json").read_text())
    assert sorted(manifest["files"]) == ["a-1.0-py3-none-any.whl", "sub/b-2.0-py3-none-any.whl"]

    # Nothing changed: the manifest matches, no file is sent (a file damaged on the host is not even looked at).
    (dest / "a-1.0-py3-none-any.whl").write_bytes(b"damaged on the host")
    again = _copy(tmp_path, src, dest)
    assert again["changed"] is False, again
    assert (dest / "a-1.0-py3-none-any.whl").read_bytes() == b"damaged on the host"

    # A changed wheel on the controller: check mode says a copy is due and makes none; a real run copies it.
    (src / "a-1.0-py3-none-any.whl").write_bytes(b"A" * 101)
    planned = _copy(tmp_path, src, dest, check=True)
    assert planned["changed"] is True, planned
    assert (dest / "a-1.0-py3-none-any.whl").read_bytes() == b"damaged on the host"
    copied = _copy(tmp_path, src, dest)
    assert copied["changed"] is True, copied
    assert (dest / "a-1.0-py3-none-any.whl").read_bytes() == b"A" * 101
    assert copied["sent"] == 1, "the unchanged wheel is not sent again"
    assert json.loads((dest / ".specgate-tree.json").read_text())["digest"] == copied["digest"]

    # A wheel lost on the host while the controller's tree changed elsewhere: the host's listing shows it, it is sent.
    (dest / "sub" / "b-2.0-py3-none-any.whl").unlink()
    (src / "c-3.0-py3-none-any.whl").write_bytes(b"c" * 10)
    healed = _copy(tmp_path, src, dest)
    assert healed["sent"] == 2, healed
    assert (dest / "sub" / "b-2.0-py3-none-any.whl").read_bytes() == b"b" * 50


def test_a_symbolic_mode_is_refused_before_anything_is_sent(tmp_path):
    src = tmp_path / "wheelhouse"
    src.mkdir()
    (src / "a-1.0-py3-none-any.whl").write_bytes(b"a")
    result = _copy(tmp_path, src, tmp_path / "dest", mode="u=rw,g=r,o=r")
    assert result["failed"], result
    assert "mode 'u=rw,g=r,o=r' is not an octal mode such as '0644'" in result["msg"]
    assert not (tmp_path / "dest").exists()


def test_a_source_that_is_not_a_directory_is_refused_naming_it(tmp_path):
    missing = tmp_path / "no-such-wheelhouse"
    result = _copy(tmp_path, missing, tmp_path / "dest")
    assert result["failed"], result
    assert f"src {missing} is not a directory on the controller" in result["msg"]
    assert not os.path.exists(tmp_path / "dest")
