"""Every ansible-playbook command README.md and its pages under docs/ show is in tests/readme_commands.yml, which says
how it is kept true (run on the demo by molecule/default, covered by a named test, or real-host only with the
reason)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import readme_commands as rc

ROOT = rc.ROOT


def test_every_command_the_readme_shows_is_registered_and_none_is_stale():
    shown = rc.documented_commands()
    assert len(shown) >= 10, shown  # the parser finds the pages' commands at all
    assert rc.readme_commands(rc.README.read_text()), "the README itself shows commands"
    registered = [e.command for e in rc.registry()]
    assert sorted(set(shown) - set(registered)) == [], "add these README commands to tests/readme_commands.yml"
    assert sorted(set(registered) - set(shown)) == [], "tests/readme_commands.yml lists commands the README lost"
    assert len(registered) == len(set(registered)), "a command is registered twice"


def test_the_parser_joins_continuations_splits_chains_and_reads_inline_code():
    text = "\n".join([
        "```bash",
        "scripts/bootstrap && .venv/bin/ansible-playbook -i inventory/demo playbooks/demo_host.yml \\",
        "  && .venv/bin/ansible-playbook deploy.yml -i inventory/demo   # comment",
        "```",
        "Run `ansible-playbook playbooks/unlock.yml -l ct200` or just `ansible-playbook`.",
    ])
    assert rc.readme_commands(text) == [
        "ansible-playbook -i inventory/demo playbooks/demo_host.yml",
        "ansible-playbook deploy.yml -i inventory/demo",
        "ansible-playbook playbooks/unlock.yml -l ct200",
    ]


@pytest.mark.parametrize("entry", [e for e in rc.registry()], ids=lambda e: e.command)
def test_each_entry_names_what_exists(entry):
    playbook, rest = rc.to_demo(entry)
    assert (ROOT / playbook).is_file(), playbook
    for arg in rest:
        if arg.startswith("@"):
            assert (ROOT / arg[1:]).is_file(), arg
    if entry.how == "covered_by":
        covering = ROOT / entry.detail["value"]
        assert covering.is_file(), covering
        text = covering.read_text()
        assert Path(playbook).name in text, f"{covering} does not run {playbook}"
        for arg in rest:
            if arg.startswith("@"):
                assert Path(arg[1:]).name in text, f"{covering} does not use {arg}"
    elif entry.how == "run":
        assert entry.detail["status"] in ("successful", "failed")
        if entry.detail["status"] == "failed":
            assert entry.detail.get("message"), "an expected failure names the message it must print"
    else:
        assert len(entry.detail["value"]) > 40, "a real-host-only command says why"


def test_to_demo_drops_the_readme_host_and_inventory():
    entry = rc.Entry("ansible-playbook playbooks/sweep.yml -i inventory/demo -e @configs/sweeps/demo.yml", "run", {})
    assert rc.to_demo(entry) == ("playbooks/sweep.yml", ["-e", "@configs/sweeps/demo.yml"])
    entry = rc.Entry("ansible-playbook deploy.yml -l ct200 --check --diff", "run", {})
    assert rc.to_demo(entry) == ("deploy.yml", ["--check", "--diff"])
