"""playbooks/tasks/debootstrap_images.yml builds the test-host images side by side and prints the progress of their
long steps (issue 29 item 4): each debootstrap and image import runs in the background, and specgate_follow_job prints
its latest log line while it runs. Stand-ins for debootstrap and podman (first on PATH) print what the real tools
print, slowly, and record when they ran."""

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
echo "$3 start $(date +%s.%N)" >> "{record}.debootstrap"
echo "I: Retrieving InRelease"; sleep 1.5
echo "I: Retrieving libc6 2.36-9"; sleep 1.5
echo "I: Unpacking libc6 2.36-9"; sleep 1.5
mkdir -p "$rootfs/etc/apt/sources.list.d"; echo "deb stale" > "$rootfs/etc/apt/sources.list"
echo "$3 end $(date +%s.%N)" >> "{record}.debootstrap"
echo "I: Base system installed successfully."
"""

FAKE_PODMAN = """#!/bin/bash
image=$(printf '%s' "${{@: -1}}" | tr '/:' '__')
printf '%s\\n' "$@" > "{record}-$image"
tar -t > "{record}-$image.tar"
echo "Getting image source signatures"; sleep 1.5
echo "Copying blob sha256:0123abcd"; sleep 3
echo "Writing manifest to image destination"
echo "0123456789abcdef"
"""


def test_debootstrap_and_the_import_print_their_latest_line_while_they_run(tmp_path):
    fakes = tmp_path / "bin"
    fakes.mkdir()
    record = tmp_path / "podman-args"
    for name, body in {"debootstrap": FAKE_DEBOOTSTRAP.format(record=record),
                       "podman": FAKE_PODMAN.format(record=record)}.items():
        (fakes / name).write_text(body)
        (fakes / name).chmod(0o755)
    private = tmp_path / "runner"
    (private / "project").mkdir(parents=True)
    play = [{
        "hosts": "localhost", "gather_facts": True, "gather_subset": ["min"],
        "vars": {"bootstrap_images_to_build": [
                     {"name": "localhost/specgate-progress-12:latest", "suite": "bookworm", "release": "12",
                      "label": "abc123"},
                     {"name": "localhost/specgate-progress-13:latest", "suite": "trixie", "release": "13",
                      "label": "def456"}],
                 "bootstrap_image_packages": ["systemd", "python3"],
                 "bootstrap_image_progress_interval": 1, "bootstrap_image_timeout": 120},
        "tasks": [{"name": "Build the image",
                   "ansible.builtin.include_tasks": str(ROOT / "playbooks/tasks/debootstrap_images.yml")}],
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
    lines = re.findall(r"\[localhost\] (debootstrap|image import) of Debian (\d+), (\d+)s: (.*)", stdout)
    for release, name, label in (("12", "localhost_specgate-progress-12_latest", "abc123"),
                                 ("13", "localhost_specgate-progress-13_latest", "def456")):
        # Which lines are caught depends on when the polls fall; that a step printed its own while it ran does not. The
        # steps run side by side and are followed in turn: Debian 13's have ended by the time Debian 12's follows do.
        for step, real in (("debootstrap", {"I: Retrieving InRelease", "I: Retrieving libc6 2.36-9",
                                            "I: Unpacking libc6 2.36-9", "I: Base system installed successfully."}),
                           ("image import", {"Getting image source signatures", "Copying blob sha256:0123abcd",
                                             "Writing manifest to image destination", "0123456789abcdef"})):
            printed = {text for printed_step, of, _, text in lines if printed_step == step and of == release}
            assert printed <= real | {"started"}, stdout[-3000:]
            if release == "12":
                assert printed - {"started"}, stdout[-3000:]
        # Each import got its image's label and the tree its debootstrap made, with the apt sources emptied.
        podman_args = Path(f"{record}-{name}")
        assert "LABEL specgate.image=" + label in podman_args.read_text().splitlines()
        assert podman_args.read_text().splitlines()[-1] == name.replace("_", "/", 1).replace("_", ":")
        assert "./etc/apt/sources.list" in Path(f"{podman_args}.tar").read_text().splitlines()
    # The two debootstraps ran side by side: both had started before either ended.
    times: dict[str, float] = {}
    for line in Path(f"{record}.debootstrap").read_text().splitlines():
        suite, event, at = line.split()
        times[f"{suite} {event}"] = float(at)
    assert max(times["bookworm start"], times["trixie start"]) < min(times["bookworm end"], times["trixie end"]), times
    # No scratch root filesystem or log left behind.
    scratch = [p for p in Path("/tmp").glob("specgate-rootfs-*") if p.stat().st_mtime >= tmp_path.stat().st_mtime]
    assert scratch == []
