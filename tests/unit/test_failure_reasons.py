"""scripts/failure_reasons.py: the one line beside each failed test or scenario in scripts/test's closing summary,
read from a real pytest JUnit report and from molecule logs as Ansible and pytest print them."""

from __future__ import annotations

import subprocess
import sys

from script_loader import ROOT, load_script

reasons = load_script("failure_reasons")


def test_a_junit_report_gives_each_failed_test_with_its_assertion(tmp_path):
    (tmp_path / "test_sample.py").write_text(
        "def test_fine():\n    assert 1\n\n"
        "def test_wrong():\n    assert [1, 2] == [1, 3], 'the batch went wrong'\n\n"
        "def test_broken():\n    raise RuntimeError('sim never answered')\n"
    )
    report = tmp_path / "report.xml"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path),
                    f"--junitxml={report}"], cwd=tmp_path, capture_output=True, check=False)  # fmt: skip
    assert reasons.junit_counts(report) == (3, 2, 0, 0)  # an exception raised in a test is a failure, not an error
    found = dict(reasons.junit_failures(report))
    assert set(found) == {"test_sample::test_wrong", "test_sample::test_broken"}
    assert "the batch went wrong" in found["test_sample::test_wrong"]
    assert "sim never answered" in found["test_sample::test_broken"]


ANSIBLE_LOG = """
TASK [Probe something that may fail] ******
fatal: [instance]: FAILED! => changed=false
  msg: not here
...ignoring

TASK [sglang_service : Wait for the engine to answer /health_generate] ******
fatal: [instance]: FAILED! => changed=false
  elapsed: 600
  msg: Timeout when waiting for 127.0.0.1:30000

PLAY RECAP ******
instance : ok=80 changed=3 unreachable=0 failed=1 skipped=9 rescued=0 ignored=1
"""


def test_a_molecule_log_gives_the_failed_task_not_an_ignored_one():
    assert reasons.molecule_reason(ANSIBLE_LOG) == (
        "task 'sglang_service : Wait for the engine to answer /health_generate' on instance: "
        "Timeout when waiting for 127.0.0.1:30000")


def test_a_molecule_log_gives_the_failed_verify_tests_first():
    log = ANSIBLE_LOG + ("=== short test summary info ===\n"
                         "FAILED tests/test_default.py::test_unit_is_active - AssertionError: unit inactive\n"
                         "FAILED tests/test_default.py::test_port - assert False\n")
    assert reasons.molecule_reason(log) == ("tests/test_default.py::test_unit_is_active - AssertionError: unit "
                                            "inactive; tests/test_default.py::test_port - assert False")


def test_molecules_own_error_after_the_last_task_failure_is_the_reason():
    log = ANSIBLE_LOG + "CRITICAL Idempotence test failed because of the following tasks:\n* [instance] => x\n"
    assert reasons.molecule_reason(log) == "Idempotence test failed because of the following tasks:"


def test_a_report_pytest_never_finished_gives_no_reason(tmp_path):
    (tmp_path / "empty.xml").write_text("")
    assert list(reasons.junit_failures(tmp_path / "empty.xml")) == []
    assert list(reasons.junit_failures(tmp_path / "missing.xml")) == []
    assert reasons.junit_counts(tmp_path / "missing.xml") == (0, 0, 0, 0)


def test_a_log_naming_no_failure_gives_nothing_and_long_reasons_are_cut():
    assert reasons.molecule_reason("PLAY RECAP\ninstance : ok=3 failed=0\n") == ""
    assert len(reasons.one_line("x " * 500)) == reasons.REASON_CHARS


def test_the_script_prints_a_reason_per_failed_test_as_scripts_test_reads_it(tmp_path):
    log = tmp_path / "default.log"
    log.write_text(ANSIBLE_LOG)
    printed = subprocess.run([sys.executable, str(ROOT / "scripts" / "failure_reasons.py"), "molecule", str(log)],
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert printed.startswith("task 'sglang_service : Wait for the engine")
