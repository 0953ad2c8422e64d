"""The ansible-playbook commands the README and the user pages under docs/ show, read from them, and the registry
(tests/readme_commands.yml) that says how each is kept true: run against the demo host by molecule/default, covered
by a named test, or real-host only with the reason. tests/unit/test_readme_commands.py holds the two to each other."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
# The pages the README hands its detail to (docs/troubleshooting.md quotes fixes, not commands to run as shown).
USER_DOCS = (README, *(ROOT / "docs" / f"{page}.md"
                        for page in ("demo", "real-hosts", "fleet", "sweep", "faults", "tests")))
REGISTRY = Path(__file__).resolve().parent / "readme_commands.yml"
_INLINE = re.compile(r"`((?:\.venv/bin/)?ansible-playbook [^`]+)`")


def normalise(command: str) -> str:
    """One spelling per command: no venv prefix, no comment, single spaces."""
    command = command.split(" # ", maxsplit=1)[0].strip()
    command = re.sub(r"^\.venv/bin/", "", command)
    return " ".join(command.split())


def documented_commands() -> list[str]:
    """Every command the README and its pages show, in reading order, each once."""
    return list(dict.fromkeys(c for page in USER_DOCS for c in readme_commands(page.read_text())))


def readme_commands(text: str) -> list[str]:
    """Every ansible-playbook command in fenced blocks (continuations joined, `&&` chains split) and inline code."""
    found: list[str] = []
    in_block = False
    pending = ""
    for raw in text.splitlines():
        if raw.startswith("```"):
            in_block = not in_block
            pending = ""
            continue
        if not in_block:
            continue
        line = pending + raw.strip()
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        pending = ""
        for part in line.split("&&"):
            command = normalise(part)
            if command.startswith("ansible-playbook "):
                found.append(command)
    for match in _INLINE.finditer(text):
        command = normalise(match.group(1))
        if len(command.split()) > 1:
            found.append(command)
    return list(dict.fromkeys(found))


@dataclass(frozen=True)
class Entry:
    command: str
    how: str  # run | covered_by | real_host
    detail: dict

    @property
    def argv(self) -> list[str]:
        return shlex.split(self.command)


def registry() -> list[Entry]:
    entries = []
    for item in yaml.safe_load(REGISTRY.read_text()):
        (how,) = [key for key in ("run", "covered_by", "real_host") if key in item]
        detail = item[how] if isinstance(item[how], dict) else {"value": item[how]}
        entries.append(Entry(normalise(item["command"]), how, detail))
    return entries


def to_demo(entry: Entry) -> tuple[str, list[str]]:
    """The playbook and the rest of the arguments, with the README's host (-l ct200) and the demo inventory
    (-i inventory/demo) left out: the molecule test supplies its own host and inventory."""
    argv = entry.argv[1:]
    playbook = next(a for a in argv if a.endswith(".yml") and not a.startswith("@"))
    rest: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("-l", "-i"):
            skip = True
        elif arg != playbook:
            rest.append(arg)
    return playbook, rest


def run_on_demo(entry: Entry, private_data_dir: Path, scenario_dir: Path, inventory: Path, instance: str):
    """Run the command as the README shows it against a molecule scenario's demo host (its host for -l ct200, its
    inventory for -i inventory/demo, the scenario's own extra vars), from the project root where users run it."""
    import ansible_runner  # only the molecule tests run commands; the registry's unit test does not need it

    playbook, rest = to_demo(entry)
    args = yaml.safe_load((scenario_dir / "molecule.yml").read_text())["provisioner"]["ansible_args"]
    return ansible_runner.run(
        private_data_dir=str(private_data_dir),
        project_dir=str(ROOT),
        playbook=str(ROOT / playbook),
        inventory=str(inventory),
        limit=f"{instance},localhost",
        extravars=json.loads(args[args.index("-e") + 1]),
        # Paths in the README are relative to the project root, where users run them.
        cmdline=" ".join(a if not a.startswith("@") else f"@{ROOT / a[1:]}" for a in rest) or None,
        envvars={"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg")},
        quiet=True,
    )
