"""The peer tests wait for the resolver venv that scripts/test sets up beside pytest (SPECGATE_RESOLVER_SETUP_PID):
while the setup runs, and no longer; a setup that outlives the wait fails the test instead of hanging it."""

from __future__ import annotations

import os
import subprocess
import time

import pytest
from resolver_cases import setup_running, wait_for_resolver_setup


def test_a_running_process_counts_and_an_ended_one_does_not_even_before_it_is_reaped():
    assert setup_running(os.getpid())
    child = subprocess.Popen(["true"])
    deadline = time.monotonic() + 10
    while setup_running(child.pid) and time.monotonic() < deadline:  # ended, not reaped: a zombie
        time.sleep(0.05)
    assert not setup_running(child.pid)
    child.wait()
    assert not setup_running(child.pid)


def test_the_wait_lasts_while_the_setup_runs(monkeypatch):
    setup = subprocess.Popen(["sleep", "2"])
    monkeypatch.setenv("SPECGATE_RESOLVER_SETUP_PID", str(setup.pid))
    started = time.monotonic()
    wait_for_resolver_setup(timeout_s=60)
    assert time.monotonic() - started >= 1.5
    assert setup.poll() is not None or not setup_running(setup.pid)
    setup.wait()


def test_without_a_setup_there_is_nothing_to_wait_for(monkeypatch):
    monkeypatch.delenv("SPECGATE_RESOLVER_SETUP_PID", raising=False)
    started = time.monotonic()
    wait_for_resolver_setup(timeout_s=60)
    assert time.monotonic() - started < 1


def test_a_setup_that_outlives_the_wait_fails_the_test_naming_it(monkeypatch):
    setup = subprocess.Popen(["sleep", "30"])
    monkeypatch.setenv("SPECGATE_RESOLVER_SETUP_PID", str(setup.pid))
    try:
        with pytest.raises(pytest.fail.Exception, match=rf"setup \(process {setup.pid}\) still runs after 1 s"):
            wait_for_resolver_setup(timeout_s=1)
    finally:
        setup.kill()
        setup.wait()
