"""playbooks/tasks/debootstrap_image.yml prints the progress of its two long steps (issue 29 item 4): debootstrap and
the image import run in the background and specgate_follow_job prints each one's latest log line while it runs.
Stand-ins for debootstrap and podman (first on PATH) print what the real tools print, slowly."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import ansible_runner
import pytest

pytestmark = [
    pytest.mark.slow,
    # become (sudo) would reset PATH to the real tools: the stand-ins need a root controller, which CI is.
    pytest.mark.skipif(os.geteuid() != 0 and not os.environ.get("CI"), reason="needs a root controller"),
]

ROOT = Path(__file__).resolve().parents[2]

FAKE_DEBOOTSTRAP = """#!/bin/bash
set -e
rootfs="$4"
echo "I: Retrieving InRelease"; sleep 1.5
echo "I: Retrieving libc6 2.36-9"; sleep 1.5
echo "I: Unpacking libc6 2.36-9"; sleep 1.5
mkdir -p "$rootfs/etc/apt/sources.list.d"; echo "deb stale" > "$rootfs/etc/apt/sources.list"
echo "I: Base system installed successfully."
"""

FAKE_PODMAN = """#!/bin/bash
printf '%s\\n' "$@" > "{record}"
tar -t > "{record}.tar"
echo "Getting image source signatures"; sleep 1.5
echo "Copying blob sha256:0123abcd"; sleep 3
echo "Writing manifest to image destination"
echo "0123456789abcdef"
"""


def test_debootstrap_and_the_import_print_their_latest_line_while_they_run(tmp_path):
    fakes = tmp_path / "bin"
    fakes.mkdir()
    record = tmp_path / "podman-args"
    for name, body in {"debootstrap": FAKE_DEBOOTSTRAP, "podman": FAKE_PODMAN.format(record=record)}.items():
        (fakes / name).write_text(body)
        (fakes / name).chmod(0o755)
    private = tmp_path / "runner"
    (private / "project").mkdir(parents=True)
    play = [{
        "hosts": "localhost", "gather_facts": True, "gather_subset": ["min"],
        "vars": {"bootstrap_image": {"name": "localhost/specgate-progress-test:latest", "suite": "bookworm",
                                     "release": "12"},
                 "bootstrap_image_packages": ["systemd", "python3"], "_bootstrap_image_label": "abc123",
                 "bootstrap_image_progress_interval": 1, "bootstrap_image_timeout": 120},
        "tasks": [{"name": "Build the image",
                   "ansible.builtin.include_tasks": str(ROOT / "playbooks/tasks/debootstrap_image.yml")}],
    }]  # fmt: skip
    (private / "project" / "play.yml").write_text(json.dumps(play))
    run = ansible_runner.run(
        private_data_dir=str(private), playbook="play.yml", quiet=True,
        inventory=f"localhost ansible_connection=local ansible_python_interpreter={sys.executable}",
        envvars={"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_FACT_CACHING": "memory",
                 "PATH": f"{fakes}{os.pathsep}{os.environ['PATH']}"},
    )  # fmt: skip
    stdout = run.stdout.read()
    assert run.status == "successful", stdout[-3000:]
    lines = re.findall(r"\[localhost\] (debootstrap|image import), (\d+)s: (.*)", stdout)
    debootstrap = [text for label, _, text in lines if label == "debootstrap"]
    imported = [text for label, _, text in lines if label == "image import"]
    # Which lines are caught depends on when the polls fall; that each step printed its own while it ran does not.
    assert debootstrap, stdout[-3000:]
    assert set(debootstrap) <= {"I: Retrieving InRelease", "I: Retrieving libc6 2.36-9", "I: Unpacking libc6 2.36-9",
                                "I: Base system installed successfully.", "started"}, stdout[-3000:]
    assert set(debootstrap) - {"started"}, stdout[-3000:]
    assert set(imported) <= {"Getting image source signatures", "Copying blob sha256:0123abcd",
                             "Writing manifest to image destination", "0123456789abcdef", "started"}, stdout[-3000:]
    assert set(imported) - {"started"}, stdout[-3000:]
    # The import got the label and the tree debootstrap made, with the apt sources emptied; no scratch left behind.
    assert "LABEL specgate.image=abc123" in record.read_text().splitlines()
    assert "./etc/apt/sources.list" in record.with_suffix(".tar").read_text().splitlines()
    scratch = [p for p in Path("/tmp").glob("specgate-rootfs-*") if p.stat().st_mtime >= tmp_path.stat().st_mtime]
    assert scratch == []
