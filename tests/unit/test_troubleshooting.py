"""docs/troubleshooting.md has an entry for every refusal and failure the code can print, and none for a message that
is gone (scripts/gen_troubleshooting.py reads them from the code; scripts/test runs its --check too)."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "gen_troubleshooting.py"
_spec = importlib.util.spec_from_file_location("gen_troubleshooting", SCRIPT)
gen = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = gen  # its dataclasses look their module up there
_spec.loader.exec_module(gen)


@pytest.fixture(scope="module")
def messages() -> list:
    return gen.extract(ROOT)


@pytest.fixture(scope="module")
def keys(messages) -> dict:
    return gen.by_key(messages)


@pytest.mark.slow
def test_the_doc_has_an_entry_for_every_message(keys):
    report = gen.check(ROOT)
    assert not report.missing, "\n".join(report.lines())


@pytest.mark.slow
def test_the_doc_has_no_entry_for_a_message_that_is_gone():
    report = gen.check(ROOT)
    assert not report.stale, "\n".join(report.lines())


@pytest.mark.slow
def test_every_entry_has_its_cause_and_fix_written():
    report = gen.check(ROOT)
    assert not report.unwritten, "\n".join(report.lines())
    text = (ROOT / gen.DOC).read_text(encoding="utf-8")
    for key, body in gen.doc_entries(text).items():
        assert "**Cause:**" in body, f"entry {key!r} lacks its cause"
        assert "**Fix:**" in body, f"entry {key!r} lacks its fix"


def test_the_extractor_finds_the_messages_of_every_stage(messages, keys):
    """A blind extractor would find nothing and pass the check: it must find what the stages print."""
    assert len(keys) >= 250, len(keys)
    by_stage = {stage: [m for m in messages if m.stage == stage] for stage in gen.STAGE_NAMES}
    minimum = {"preflight": 10, "cuda_toolkit": 10, "sglang_env": 15, "model_weights": 40, "sglang_service": 70,
               "spec_gate": 60, "spec_sweep": 3, "locks_rollback": 3, "any_stage": 3}
    for stage, at_least in minimum.items():
        assert len(by_stage[stage]) >= at_least, (stage, len(by_stage[stage]))
    assert {m.where.split(":")[0].split("/")[0] for m in messages} >= {
        "roles", "playbooks", "library", "module_utils", "filter_plugins", "action_plugins"}


@pytest.mark.parametrize(
    ("stage", "key", "source"),
    [
        # preflight: a refusal record (Problem(variable, message, fix)) and the module's header
        ("preflight", "no NVIDIA GPU answered nvidia-smi on this host, but the host is",
         "module_utils/specgate/preflight/deployment_checks.py"),
        ("preflight", "preflight refused the deployment (… problem(s))",
         "module_utils/specgate/preflight/deployment_checks.py"),
        ("preflight", "… --query-gpu failed (rc …)", "library/gpu_facts.py"),
        # cuda_toolkit: a list of problems, and an assert's fail_msg
        ("cuda_toolkit", "cuda_toolkit_version: CUDA … cannot compile for",
         "module_utils/specgate/cuda/cuda_toolkit.py"),
        ("cuda_toolkit", "cuda_toolkit_apt_key_url: cuda_toolkit_apt_repo_url is set but its signing key is not",
         "roles/cuda_toolkit/tasks/validate.yml"),
        # sglang_env: a helper whose result is added to the problems
        ("sglang_env", "…: … provides …, which specgate does not know", "module_utils/specgate/env/sglang_env_plan.py"),
        # model_weights: an assert's Jinja fail_msg, a raised error, a refusal helper's return
        ("model_weights", "A hub snapshot needs its revision", "roles/model_weights/tasks/validate.yml"),
        ("model_weights", "not enough disk before downloading anything",
         "module_utils/specgate/weights/weights_snapshot.py"),
        ("model_weights", "…: … is gated and the hub refused access (HTTP …)",
         "module_utils/specgate/weights/hf_fetch.py"),
        # sglang_service: fail_json, a raised renderer error, a task's fail msg, a wait's reason
        ("sglang_service", "… did not become ready", "library/sglang_service_start.py"),
        ("sglang_service",
         "… DDTREE needs an SGLang install carrying the DDTree pull request (sgl-project/sglang#29907)",
         "module_utils/specgate/service/sglang_flags.py"),
        ("sglang_service", "Release … failed…", "roles/sglang_service/tasks/recover.yml"),
        ("sglang_service", "not healthy after … s (last answer", "module_utils/specgate/service/readiness.py"),
        # spec_gate: the verdict paragraph, an exception returned to be raised, an assert
        ("spec_gate", "Gate … for release", "module_utils/specgate/gate/gate_decision.py"),
        ("spec_gate", "the server at … refused the request with HTTP", "module_utils/specgate/gate/bench_client.py"),
        ("spec_gate", "The server on … requires an API key but spec_gate_api_key is empty",
         "roles/spec_gate/tasks/inputs.yml"),
        # spec_sweep and locks
        ("spec_sweep", "spec_sweep_configs is not a usable sweep", "roles/spec_sweep/tasks/validate.yml"),
        ("locks_rollback", "The change lock … is held by", "module_utils/specgate/service/host_lock.py"),
        ("locks_rollback", "No known-good release on … (… is missing)", "roles/sglang_service/tasks/rollback.yml"),
        # an action plugin's failed result
        ("any_stage", "variables … (Ansible would ignore them and leave the host as it",
         "module_utils/specgate/common/variable_names.py"),
    ],
)
def test_known_messages_are_found(keys, stage, key, source):
    assert key in keys, f"{key!r} not found; the extractor lost a pattern (see --list)"
    found = keys[key]
    assert found[0].stage == stage
    assert source in {m.where.split(":")[0] for m in found}


def test_a_message_that_only_forwards_a_python_refusal_is_not_a_message(keys):
    assert not any(key.strip(gen.FIELD + " ") == "" for key in keys)
    assert not any("_refusal }}" in m.template for ms in keys.values() for m in ms)


def test_keys_are_the_leading_words_with_fields_as_ellipses():
    assert gen.key_of("cuda_toolkit_version: CUDA … cannot compile for …. Fix: set it.") == (
        "cuda_toolkit_version: CUDA … cannot compile for")
    assert gen.key_of("Release … failed: … …") == "Release … failed"
    assert gen.jinja_template("Port {{ p }} is held by {% for h in x %}PID {{ h.pid }}{% endfor %}, not '}}'") == (
        "Port … is held by …PID …, not '}}'")
    assert gen.jinja_template("{{ 'a }} b' ~ x }} tail") == "… tail"


def _tree(root: Path, python: str, tasks: str, doc: str) -> Path:
    (root / "module_utils" / "specgate" / "gate").mkdir(parents=True)
    (root / "module_utils" / "specgate" / "gate" / "thing.py").write_text(textwrap.dedent(python))
    (root / "roles" / "spec_gate" / "tasks").mkdir(parents=True)
    (root / "roles" / "spec_gate" / "tasks" / "validate.yml").write_text(textwrap.dedent(tasks))
    (root / "docs").mkdir()
    (root / gen.DOC).write_text(textwrap.dedent(doc))
    return root


PYTHON = '''
    def check(value, problems):
        if value < 0:
            raise ValueError(f"spec_gate_widgets must be >= 0, got {value}")
        problems.append("spec_gate_gizmo is unset; set it to a gizmo")
'''
TASKS = '''
    ---
    - name: Refuse a bad frobnicator
      ansible.builtin.assert:
        that: spec_gate_frob | length > 0
        fail_msg: >-
          spec_gate_frob is {{ spec_gate_frob | to_json }}: a frobnicator
          needs a name. Fix: set it.
    - name: Forward a refusal computed in Python
      ansible.builtin.assert:
        that: _spec_gate_x | length == 0
        fail_msg: "{{ _spec_gate_x }}"
'''


def test_a_message_without_an_entry_is_reported_missing(tmp_path):
    root = _tree(tmp_path, PYTHON, TASKS, """\
        # Troubleshooting

        ## spec_gate

        ### `spec_gate_widgets must be >= 0, got`
        <!-- key: spec_gate_widgets must be >= 0, got -->

        - **Cause:** negative widgets.
        - **Fix:** set spec_gate_widgets >= 0.
        """)
    report = gen.check(root)
    assert sorted(report.missing) == ["spec_gate_frob is …: a frobnicator needs a name",
                                      "spec_gate_gizmo is unset; set it to a gizmo"]
    assert not report.stale
    assert not report.ok
    assert any("spec_gate_gizmo is unset" in line and "thing.py" in line for line in report.lines())


def test_an_entry_whose_message_is_gone_is_reported_stale(tmp_path):
    root = _tree(tmp_path, PYTHON, TASKS, """\
        ## spec_gate

        <!-- key: spec_gate_widgets must be >= 0, got -->
        - **Cause:** x
        - **Fix:** y
        <!-- key: spec_gate_gizmo is unset; set it to a gizmo -->
        - **Cause:** x
        - **Fix:** y
        <!-- key: spec_gate_frob is …: a frobnicator needs a name -->
        - **Cause:** x
        - **Fix:** y
        <!-- key: spec_gate_sprocket has rusted -->
        - **Cause:** x
        - **Fix:** y
        """)
    report = gen.check(root)
    assert not report.missing
    assert report.stale == ["spec_gate_sprocket has rusted"]
    assert not report.ok


def test_skeletons_go_under_their_stage_keep_written_entries_and_must_be_filled_in(tmp_path):
    written = """\
        # Troubleshooting

        ## preflight

        Intro of preflight.

        ## spec_gate

        ### `spec_gate_widgets must be >= 0, got`
        <!-- key: spec_gate_widgets must be >= 0, got -->

        - **Cause:** negative widgets.
        - **Fix:** set spec_gate_widgets >= 0.

        ## Locks and rollback

        Nothing yet.
        """
    root = _tree(tmp_path, PYTHON, TASKS, written)
    report = gen.check(root)
    text = gen.with_skeletons((root / gen.DOC).read_text(), report.missing)
    (root / gen.DOC).write_text(text)
    assert "- **Cause:** negative widgets." in text
    spec_gate = text.split("## spec_gate", 1)[1].split("## Locks and rollback", 1)[0]
    assert "<!-- key: spec_gate_gizmo is unset; set it to a gizmo -->" in spec_gate
    assert "<!-- key: spec_gate_frob is …: a frobnicator needs a name -->" in spec_gate
    after = gen.check(root)
    assert not after.missing
    assert not after.stale
    assert sorted(after.unwritten) == sorted(report.missing)  # a skeleton's TODO fails the check until written
    assert gen.with_skeletons(text, after.missing) == text  # nothing left to add
