"""The sglang_service role's modules document themselves: ansible-doc renders each, and the documented
options are exactly the argument spec the module enforces."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODULES = ("sglang_service_stop", "sglang_service_start", "sglang_service_state", "page_cache_prefetch")
ANSIBLE_DOC = Path(sys.executable).parent / "ansible-doc"


@pytest.mark.parametrize("module", MODULES)
def test_ansible_doc_renders_the_module(module):
    done = subprocess.run(
        [str(ANSIBLE_DOC), "-M", str(ROOT / "library"), module], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr
    assert module.upper() in done.stdout or module in done.stdout


@pytest.mark.parametrize("module", MODULES)
def test_documented_options_match_the_argument_spec(module):
    done = subprocess.run(
        [str(ANSIBLE_DOC), "-j", "-M", str(ROOT / "library"), module],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    documented = json.loads(done.stdout)[module]["doc"]["options"]
    source = (ROOT / "library" / f"{module}.py").read_text()
    spec_names = {
        line.split('"')[1] for line in source.splitlines() if line.strip().startswith('"') and '"type"' in line
    }
    assert set(documented) == spec_names


def test_secrets_are_no_log_in_the_start_module():
    source = (ROOT / "library" / "sglang_service_start.py").read_text()
    for option in ("api_key", "redact"):
        line = next(line for line in source.splitlines() if line.strip().startswith(f'"{option}": {{'))
        assert '"no_log": True' in line, option


def _documented(options: dict) -> dict:
    """ansible-doc's options as {name: nested suboptions or None}."""
    return {name: _documented(spec["suboptions"]) if "suboptions" in spec else None for name, spec in options.items()}


def _specified(spec: dict) -> dict:
    return {name: _specified(arg["options"]) if "options" in arg else None for name, arg in spec.items()}


@pytest.mark.parametrize("module", sorted(p.stem for p in (ROOT / "library").glob("*.py")))
def test_every_module_renders_and_documents_exactly_its_argument_spec(module):
    done = subprocess.run(
        [str(ANSIBLE_DOC), "-j", "-M", str(ROOT / "library"), module],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)[module]
    assert doc["doc"]["short_description"]
    assert doc["examples"].strip()
    spec = getattr(__import__(module), "ARGUMENT_SPEC", None)
    if spec is not None:  # modules that name their spec: compare it whole, suboptions included
        assert _documented(doc["doc"].get("options", {})) == _specified(spec)


def test_secret_contents_are_no_log_in_the_files_module():
    from sglang_service_files import ARGUMENT_SPEC

    # Top level: a nested no_log value is masked only verbatim (see the option's description).
    assert ARGUMENT_SPEC["secrets"]["no_log"] is True
    assert ARGUMENT_SPEC["secrets"]["type"] == "dict"


def test_every_module_and_action_in_the_project_renders_with_ansible_doc():
    """One ansible-doc call over all of library/: a YAML slip in any DOCUMENTATION fails here, not for a user."""
    modules = sorted(p.stem for p in (ROOT / "library").glob("*.py"))
    done = subprocess.run([str(ANSIBLE_DOC), "-j", "-M", str(ROOT / "library"), *modules],
                          capture_output=True, text=True, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr
    rendered = json.loads(done.stdout)
    assert sorted(rendered) == modules
    for action in (ROOT / "action_plugins").glob("*.py"):
        assert action.stem in rendered, f"action {action.stem} has no documentation stub in library/"
        source = action.read_text()
        valid = source.split("_VALID_ARGS = frozenset(")[1].split(")")[0]
        declared = set("".join(valid.split()).strip("{}").replace('"', "").split(",")) - {""}
        assert set(rendered[action.stem]["doc"].get("options") or {}) == declared, action.stem
