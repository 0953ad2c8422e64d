"""stage_record: a stage has nothing to do only when the record vouches for these inputs and the host still holds
what the record says - every drift (content, mode, owner, a missing path, account or package, another installed
set) sends the stage down its full path. The module is driven against real files in a temp dir."""

from __future__ import annotations

import getpass
import grp
import hashlib
import json
import os
import pwd

import pytest
import stage_record as module  # library/stage_record.py (tests/conftest.py puts library/ on sys.path)
from ansible.module_utils.specgate.common.stage_record import (
    Observed,
    account_differences,
    content_digest,
    input_parts,
    inputs_digest,
    observe,
    package_differences,
    path_differences,
    record_differences,
    record_text,
)
from ansible.module_utils.testing import patch_module_args

pytestmark = pytest.mark.host

ME = pwd.getpwuid(os.getuid()).pw_name
MY_GROUP = grp.getgrgid(os.getgid()).gr_name


def test_inputs_digest_ignores_key_order_and_sees_any_value_change():
    assert inputs_digest({"a": 1, "b": [1, 2]}) == inputs_digest({"b": [1, 2], "a": 1})
    assert inputs_digest({"a": 1, "b": [1, 2]}) != inputs_digest({"a": 1, "b": [2, 1]})


def test_record_vouches_only_for_its_own_inputs_and_fingerprint():
    text = record_text("d1", "f1")
    assert record_differences(text, "d1", "f1") == []
    assert record_differences(None, "d1", "f1") == ["no record of a full run (first run, or one that did not finish)"]
    assert "inputs differ" in record_differences(text, "d2", "f1")[0]
    assert "installed differs" in record_differences(text, "d1", "f2")[0]
    assert record_differences("{not json", "d1", "f1") == ["the record is not JSON"]
    assert record_differences(json.dumps({"version": 0}), "d1", "f1") == ["the record is of another format"]


def test_a_record_with_its_parts_names_the_one_input_that_changed():
    """A patch removed from sglang_env_patches once read only 'the inputs differ ... (a variable, the plan, the
    wheels or specgate)'."""
    before = {"vars": {"sglang_env_patches": ["ddtree.patch"], "sglang_env_sglang_version": "0.5.23"},
              "plan": {"pin": "sglang==0.5.23", "patches": [{"src": "ddtree.patch"}]}, "wheels": ["a.whl"],
              "patches": ["--- a\n+++ b\n"], "role": "abc"}  # fmt: skip
    text = record_text(inputs_digest(before), "f1", input_parts(before))
    after = {**before, "vars": {**before["vars"], "sglang_env_patches": []}, "plan": {**before["plan"], "patches": []},
             "patches": []}  # fmt: skip
    (reason,) = record_differences(text, inputs_digest(after), "f1", input_parts(after))
    assert reason == ("these differ from the last full run's: a patch file's content, the plan's patches, "
                      "sglang_env_patches")  # fmt: skip
    bumped = {**before, "wheels": ["b.whl"], "role": "abd"}
    (reason,) = record_differences(text, inputs_digest(bumped), "f1", input_parts(bumped))
    assert reason == ("these differ from the last full run's: the stage's own tasks (a newer specgate), "
                      "the wheelhouse's wheels")  # fmt: skip
    # A record written before the parts were kept still says the inputs differ
    old = record_text(inputs_digest(before), "f1")
    assert "inputs differ" in record_differences(old, inputs_digest(after), "f1", input_parts(after))[0]


def test_path_differences_name_kind_owner_group_mode_and_content(tmp_path):
    target = tmp_path / "cuda.env"
    target.write_text("CUDA_HOME=/x\n")
    target.chmod(0o644)
    want = {"path": str(target), "state": "file", "owner": ME, "group": MY_GROUP, "mode": "0644",
            "content": "CUDA_HOME=/x\n"}  # fmt: skip
    assert path_differences(want, observe(str(target), True)) == []
    assert path_differences({**want, "mode": "644"}, observe(str(target), True)) == []  # as YAML may spell it
    target.write_text("CUDA_HOME=/edited\n")
    assert path_differences(want, observe(str(target), True)) == [f"{target} differs from what the stage writes"]
    target.write_text("CUDA_HOME=/x\n")
    target.chmod(0o600)
    assert path_differences(want, observe(str(target), True)) == [f"{target} has mode 0600, not 0644"]
    assert path_differences({**want, "owner": "nobody-else"}, observe(str(target), True))[0].endswith(
        "not nobody-else")
    assert path_differences({**want, "state": "directory"}, observe(str(target), True)) == [
        f"{target} is a file, not a directory"]  # fmt: skip
    target.unlink()
    assert path_differences(want, observe(str(target), True)) == [f"{target} is missing"]


def test_a_secret_file_is_compared_by_the_digest_it_is_given_never_by_its_text(tmp_path):
    """The router's key file: the stage hands the module the sha256 of what it writes, so the key is no argument."""
    target = tmp_path / "router.env"
    target.write_text("SGLANG_ROUTER_API_KEY=sk-1\n")
    want = {"path": str(target), "state": "file", "sha256": hashlib.sha256(b"SGLANG_ROUTER_API_KEY=sk-1\n").hexdigest()}
    assert content_digest(want) == want["sha256"]
    assert path_differences(want, observe(str(target), content_digest(want) is not None)) == []
    target.write_text("SGLANG_ROUTER_API_KEY=sk-2\n")  # a new key: the stage runs its file tasks again
    assert path_differences(want, observe(str(target), True)) == [f"{target} differs from what the stage writes"]
    assert content_digest({"path": "/x"}) is None


def test_a_link_is_judged_by_kind_not_by_its_own_mode(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "home").symlink_to(tmp_path / "real")
    assert path_differences({"path": str(tmp_path / "home"), "state": "link", "mode": "0755"},
                            observe(str(tmp_path / "home"), False)) == []  # fmt: skip
    assert observe(str(tmp_path / "real"), False).kind == "directory"


def test_account_differences_see_a_missing_user_or_group_and_a_wrong_shell():
    assert account_differences([{"name": ME, "group": MY_GROUP}], [MY_GROUP]) == []
    assert account_differences([], ["specgate-no-such-group"]) == ["group specgate-no-such-group is missing"]
    assert account_differences([{"name": "specgate-no-such-user"}], []) == ["user specgate-no-such-user is missing"]
    shell = pwd.getpwnam(ME).pw_shell
    assert account_differences([{"name": ME, "shell": "/bin/specgate-none"}], []) == [
        f"user {ME}'s shell is {shell}, not /bin/specgate-none"]  # fmt: skip


def test_package_differences_want_installed_ok_installed():
    output = "g++\tii \npython3-venv\trc \nlibc6:amd64\tii \n"
    assert package_differences(["g++", "libc6"], output) == []
    assert package_differences(["python3-venv", "git"], output) == [
        "package python3-venv is not installed", "package git is not installed"]  # fmt: skip


def run_module(capsys, check_mode=False, **args):
    with patch_module_args({**args, "_ansible_check_mode": check_mode}), pytest.raises(SystemExit):
        module.main()
    return json.loads(capsys.readouterr().out)


def test_module_records_a_full_run_then_sees_it_converged_until_the_host_drifts(tmp_path, capsys):
    env = tmp_path / "cuda.env"
    env.write_text("A=1\n")
    env.chmod(0o644)
    record = str(tmp_path / "stage" / "record.json")
    common = {
        "record": record,
        "inputs": {"vars": {"cuda_toolkit_version": "13.0"}},
        "fingerprint": {"files": {"env_file": "A=1\n"}, "facts": {"version": "13.0"}},
        "paths": [{"path": str(env), "state": "file", "owner": ME, "mode": "0644", "content": "A=1\n"}],
        "users": [{"name": getpass.getuser()}],
    }
    first = run_module(capsys, **common)
    assert first["converged"] is False
    assert first["differences"] == ["no record of a full run (first run, or one that did not finish)"]

    # A full run records the fingerprint it took itself (engine_fingerprint's, the same as the check's).
    taken = first["fingerprint"]
    dry = run_module(capsys, check_mode=True, state="present", installed_fingerprint=taken, **common)
    assert dry["changed"] is True
    assert not os.path.exists(record)  # check mode writes nothing

    written = run_module(capsys, state="present", installed_fingerprint=taken, **common)
    assert written["changed"] is True
    assert oct(os.stat(record).st_mode & 0o777) == "0o644"
    assert run_module(capsys, state="present", installed_fingerprint=taken, **common)["changed"] is False

    again = run_module(capsys, **common)
    assert (again["converged"], again["differences"]) == (True, [])
    assert again["fingerprint"] == written["fingerprint"]

    env.write_text("A=2\n")
    drifted = run_module(capsys, **common)
    assert drifted["converged"] is False
    assert drifted["differences"] == [f"{env} differs from what the stage writes"]
    env.write_text("A=1\n")

    bumped = run_module(capsys, **{**common, "inputs": {"vars": {"cuda_toolkit_version": "13.1"}}})
    assert bumped["converged"] is False
    assert bumped["differences"][0] == "these differ from the last full run's: cuda_toolkit_version"

    refingered = run_module(capsys, **{**common, "fingerprint": {"files": {"env_file": "A=3\n"}}})
    assert refingered["converged"] is False
    assert "installed differs" in refingered["differences"][0]


def test_module_reports_a_missing_interpreter_and_a_missing_package(tmp_path, capsys):
    common = {"record": str(tmp_path / "r.json"), "inputs": {}, "fingerprint": {"python": str(tmp_path / "py")},
              "packages": ["specgate-no-such-package=1.0"]}  # fmt: skip
    run_module(capsys, state="present", installed_fingerprint=run_module(capsys, **common)["fingerprint"], **common)
    result = run_module(capsys, **common)
    assert result["converged"] is False
    assert result["present"] is False
    assert f"{tmp_path / 'py'} is missing" in result["differences"]
    assert "package specgate-no-such-package is not installed" in result["differences"]


def test_observe_reads_content_only_when_asked(tmp_path):
    (tmp_path / "f").write_text("x")
    assert observe(str(tmp_path / "f"), False).sha256 == ""
    assert observe(str(tmp_path / "f"), True).sha256 == hashlib.sha256(b"x").hexdigest()
    assert observe(str(tmp_path / "missing"), True) == Observed(kind=None)
