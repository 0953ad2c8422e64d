"""sglang_service_files: one call puts directories, a staged release, single files and removals in place."""

from __future__ import annotations

import grp
import json
import os
import pwd
import shutil
import stat

import pytest
import sglang_service_files as module  # library/sglang_service_files.py (tests/conftest.py puts library/ on sys.path)
from ansible.module_utils.specgate.service import service_files
from ansible.module_utils.specgate.service.service_files import Ownership, WantedFile, WantedRelease
from ansible.module_utils.testing import patch_module_args

pytestmark = pytest.mark.host

ME = pwd.getpwuid(os.getuid()).pw_name
MY_GROUP = grp.getgrgid(os.getgid()).gr_name
SECRET = "sk-do-not-show-0123456789"


def run(capsys, check_mode=False, diff=False, **args):
    args.setdefault("secrets", secrets())
    with (
        patch_module_args({**args, "_ansible_check_mode": check_mode, "_ansible_diff": diff}),
        pytest.raises(SystemExit),
    ):
        module.main()
    return json.loads(capsys.readouterr().out)


def release_args(tmp_path, rid="dflash-bs8-0123456789", **extra):
    return {
        "path": str(tmp_path / "releases" / rid),
        "owner": ME,
        "group": MY_GROUP,
        "files": [
            {"name": "server.yaml", "content": "speculative-algorithm: DFLASH\n"},
            {"name": "launch.yaml", "secret": "launch"},
        ],
        **extra,
    }


def secrets(launch=f"speculative-algorithm: DFLASH\napi-key: {SECRET}\n", **more):
    return {"launch": launch, **more}


def mode_of(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_a_new_release_is_written_whole_with_its_modes_then_left_alone(tmp_path, capsys):
    first = run(capsys, release=release_args(tmp_path))
    rel = tmp_path / "releases" / "dflash-bs8-0123456789"
    assert first["changed"]
    assert first["release_created"]
    assert (rel / "server.yaml").read_text() == "speculative-algorithm: DFLASH\n"
    assert SECRET in (rel / "launch.yaml").read_text()
    assert (mode_of(rel), mode_of(rel / "server.yaml"), mode_of(rel / "launch.yaml")) == (0o750, 0o640, 0o640)
    assert sorted(p.name for p in rel.parent.iterdir()) == ["dflash-bs8-0123456789"]  # no staging left behind
    second = run(capsys, release=release_args(tmp_path))
    assert (second["changed"], second["release_created"], second["changed_paths"]) == (False, False, [])


def test_a_secret_is_never_in_the_result_or_its_diff(tmp_path, capsys):
    assert SECRET not in json.dumps(run(capsys, diff=True, release=release_args(tmp_path)))
    out = run(capsys, diff=True, release=release_args(tmp_path), secrets=secrets(f"api-key: {SECRET}-rotated\n"))
    text = json.dumps(out)
    assert SECRET not in text
    launch = [d for d in out["diff"] if d["after_header"].endswith("launch.yaml")]
    assert launch
    assert launch[0]["after"] == "(secret content, not shown)\n"


def test_an_existing_release_gets_only_what_its_name_does_not_hash_rewritten(tmp_path, capsys):
    run(capsys, release=release_args(tmp_path))
    rel = tmp_path / "releases" / "dflash-bs8-0123456789"
    (rel / "server.yaml").chmod(0o666)  # drifted by hand
    out = run(capsys, release=release_args(tmp_path), secrets=secrets("api-key: sk-rotated\n"))
    assert out["changed"]
    assert not out["release_created"]
    assert out["changed_paths"] == [str(rel / "server.yaml"), str(rel / "launch.yaml")]
    assert mode_of(rel / "server.yaml") == 0o640
    assert (rel / "launch.yaml").read_text() == "api-key: sk-rotated\n"


def test_a_new_release_shows_in_the_diff_as_its_file_names(tmp_path, capsys):
    out = run(capsys, check_mode=True, diff=True, release=release_args(tmp_path))
    rel = tmp_path / "releases" / "dflash-bs8-0123456789"
    assert out["diff"] == [{"before_header": f"{rel} (absent)", "after_header": str(rel), "before": "",
                            "after": "server.yaml\nlaunch.yaml\n"}]  # fmt: skip


def test_check_mode_reports_and_writes_nothing(tmp_path, capsys):
    out = run(
        capsys,
        check_mode=True,
        directories=[{"path": str(tmp_path / "etc"), "owner": ME, "group": MY_GROUP, "mode": "0750"}],
        release=release_args(tmp_path),
        files=[{"path": str(tmp_path / "etc" / "unit"), "content": "[Unit]\n", "owner": ME, "group": MY_GROUP,
                "mode": "0644"}],
    )  # fmt: skip
    assert out["changed"]
    assert out["release_created"]
    assert len(out["changed_paths"]) == 3
    assert list(tmp_path.iterdir()) == []


def test_check_mode_tolerates_an_owner_an_earlier_stage_would_create(tmp_path, capsys):
    out = run(capsys, check_mode=True, directories=[{"path": str(tmp_path / "c"), "owner": "no-such-user-x",
                                                     "group": MY_GROUP, "mode": "0750"}])  # fmt: skip
    assert out["changed"]
    assert not out.get("failed")


def test_a_missing_owner_fails_naming_it_before_anything_is_written(tmp_path, capsys):
    out = run(
        capsys,
        directories=[{"path": str(tmp_path / "made-first"), "mode": "0755", "owner": ME, "group": MY_GROUP}],
        files=[{"path": str(tmp_path / "f"), "content": "x", "owner": "no-such-user-x", "group": MY_GROUP,
                "mode": "0644"}],
    )  # fmt: skip
    assert out["failed"]
    assert "no-such-user-x" in out["msg"]
    assert str(tmp_path / "f") in out["msg"]
    assert list(tmp_path.iterdir()) == []


def test_a_bad_mode_fails_naming_the_entry(tmp_path, capsys):
    out = run(capsys, files=[{"path": str(tmp_path / "f"), "content": "x", "mode": "rw-r--r--"}])
    assert out["failed"]
    assert "rw-r--r--" in out["msg"]
    assert "files:" in out["msg"]


def test_a_secret_key_that_is_not_given_fails_naming_it(tmp_path, capsys):
    out = run(capsys, files=[{"path": str(tmp_path / "f"), "secret": "hf_env", "mode": "0600"}])
    assert out["failed"]
    assert "'hf_env' is not a key of secrets" in out["msg"]
    assert not (tmp_path / "f").exists()


def test_a_multi_line_secret_never_reaches_the_module_log(tmp_path, capsys, monkeypatch):
    """Ansible masks a nested no_log value only verbatim, and logs nested lists via str() (newlines escaped):
    secrets are a top-level no_log option for that reason."""
    logged = []
    monkeypatch.setattr(module.AnsibleModule, "log", lambda self, msg, log_args=None: logged.append(msg))
    run(capsys, release=release_args(tmp_path), secrets=secrets(f"model-path: /m\napi-key: {SECRET}\n"))
    assert logged
    assert all(SECRET not in line for line in logged)


def test_content_and_secret_are_exclusive(tmp_path, capsys):
    both = {"path": str(tmp_path / "f"), "content": "x", "secret": "launch", "mode": "0600"}
    out = run(capsys, files=[both])
    assert out["failed"]
    assert "mutually exclusive" in out["msg"]


def test_a_release_file_name_cannot_leave_the_release(tmp_path, capsys):
    args = release_args(tmp_path)
    args["files"].append({"name": "../escape", "content": "x"})
    out = run(capsys, release=args)
    assert out["failed"]
    assert "../escape" in out["msg"]
    assert not (tmp_path / "releases" / "escape").exists()


def test_single_files_are_written_with_owner_and_mode_and_removed_when_absent(tmp_path, capsys):
    secret_file = tmp_path / "secrets" / "sglang.env"
    args = {
        "directories": [{"path": str(tmp_path / "secrets"), "owner": ME, "group": MY_GROUP, "mode": "0750"}],
        "files": [{"path": str(secret_file), "secret": "hf_env", "owner": ME, "group": MY_GROUP, "mode": "0600"}],
        "secrets": secrets(hf_env="HF_TOKEN=hf_x\n"),
    }
    assert run(capsys, **args)["changed"]
    assert (mode_of(tmp_path / "secrets"), mode_of(secret_file)) == (0o750, 0o600)
    assert secret_file.read_text() == "HF_TOKEN=hf_x\n"
    assert not run(capsys, **args)["changed"]
    gone = run(capsys, absent=[str(secret_file)])
    assert gone["changed_paths"] == [str(secret_file)]
    assert not secret_file.exists()
    assert not run(capsys, absent=[str(secret_file)])["changed"]


def test_a_file_whose_directory_is_missing_fails_with_the_fix(tmp_path, capsys):
    out = run(capsys, files=[{"path": str(tmp_path / "nowhere" / "f"), "content": "x", "mode": "0644"}])
    assert out["failed"]
    assert "list it under directories" in out["msg"]


def test_a_symlink_where_a_file_belongs_is_refused(tmp_path, capsys):
    (tmp_path / "target").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "target")
    out = run(capsys, files=[{"path": str(tmp_path / "link"), "content": "y", "mode": "0644"}])
    assert out["failed"]
    assert "not a regular file" in out["msg"]
    assert (tmp_path / "target").read_text() == "x"


def test_an_interrupted_staging_is_removed_and_never_becomes_a_release(tmp_path, monkeypatch):
    mine = Ownership(ME, MY_GROUP, 0o640)
    rel = tmp_path / "releases" / "r1"
    release = WantedRelease(rel, Ownership(ME, MY_GROUP, 0o750),
                            (WantedFile(rel / "a", b"a", mine), WantedFile(rel / "b", b"b", mine)))  # fmt: skip
    real_write = service_files.write_atomically
    calls = []

    def write_then_die(path, content, ownership):
        calls.append(path.name)
        if path.name == "b":
            raise OSError("disk full")
        real_write(path, content, ownership)

    monkeypatch.setattr(service_files, "write_atomically", write_then_die)
    with pytest.raises(OSError, match="disk full"):
        service_files.apply([], release, [], [], check=False)
    assert calls == ["a", "b"]
    assert list((tmp_path / "releases").iterdir()) == []  # neither the release nor its staging

    # A staging left by a killed run (no cleanup ran) is removed by the next one, which writes the release.
    (tmp_path / "releases" / ".staging-r1-abc").mkdir()
    monkeypatch.setattr(service_files, "write_atomically", real_write)
    outcome = service_files.apply([], release, [], [], check=False)
    assert outcome.release_created
    assert sorted(p.name for p in (tmp_path / "releases").iterdir()) == ["r1"]
    assert (rel / "b").read_bytes() == b"b"


def test_a_secret_file_is_never_readable_before_its_mode_is_set(tmp_path, monkeypatch):
    seen = []
    real_fdopen = os.fdopen

    def spy(fd, *args, **kwargs):
        seen.append(stat.S_IMODE(os.fstat(fd).st_mode))
        return real_fdopen(fd, *args, **kwargs)

    monkeypatch.setattr(service_files.os, "fdopen", spy)
    service_files.write_atomically(tmp_path / "s", b"secret", Ownership(ME, MY_GROUP, 0o600))
    assert seen == [0o600]


GOOD_UNIT = (
    "[Unit]\nDescription=x\n\n[Service]\nType=exec\nExecStart=/bin/true\n\n[Install]\nWantedBy=multi-user.target\n"
)
BAD_UNIT = GOOD_UNIT.replace("ExecStart=/bin/true", "ExecStart=bin/true-relative")


def unit_args(tmp_path, content, validate="systemd-analyze verify %s"):
    (tmp_path / "system").mkdir(exist_ok=True)
    return {"path": str(tmp_path / "system" / "sglang.service"), "content": content, "mode": "0644",
            "owner": ME, "group": MY_GROUP, "validate": validate}  # fmt: skip


def test_a_unit_systemd_rejects_fails_the_call_and_nothing_is_written(tmp_path, capsys):
    # The real systemd-analyze (the controller and every supported host have systemd).
    assert shutil.which("systemd-analyze"), "systemd-analyze is missing on this machine"
    unit = tmp_path / "system" / "sglang.service"
    assert run(capsys, files=[unit_args(tmp_path, GOOD_UNIT)])["changed"]
    out = run(capsys, release=release_args(tmp_path), files=[unit_args(tmp_path, BAD_UNIT)])
    assert out["failed"]
    assert "systemd-analyze verify" in out["msg"]
    assert str(unit) in out["msg"]  # systemd's complaint names the real path, not the private copy
    assert "bin/true-relative" in out["msg"]
    assert unit.read_text() == GOOD_UNIT
    assert not (tmp_path / "releases").exists(), "a rejected unit must stop the call before the release is written"


def test_validate_runs_only_when_the_content_changes_and_never_in_check_mode(tmp_path, capsys):
    counter = tmp_path / "validated"
    validate = f"sh -c 'cat \"$1\" >> {counter}' validate %s"
    run(capsys, files=[unit_args(tmp_path, GOOD_UNIT, validate)])
    run(capsys, files=[unit_args(tmp_path, GOOD_UNIT, validate)])
    run(capsys, check_mode=True, files=[unit_args(tmp_path, BAD_UNIT, validate)])
    assert counter.read_text() == GOOD_UNIT  # once: the unchanged second run and check mode did not validate


def test_a_validate_command_without_percent_s_is_refused(tmp_path, capsys):
    out = run(capsys, files=[unit_args(tmp_path, GOOD_UNIT, "systemd-analyze verify")])
    assert out["failed"]
    assert "must contain %s" in out["msg"]
