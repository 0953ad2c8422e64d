"""An SGLang pin the renderer would refuse is refused by sglang_env's validate entry point, before any stage
changes the host.

deploy.yml -l ct200 as users run it: the release comes from sglang_env_packages (or sglang_env_sglang_version),
sglang_env's plan judges it with the renderer's own rule (common/engine.py parse_sglang_version) and publishes the
engine fact every later check reads. Judged at the service stage, the same refusal came after CUDA, the venv and
the weights had changed the host.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from integration.preflight_runner import run_on_copies_of_ct200

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


PINS = {
    "pin-0.5.24": ({"sglang_env_packages": ["sglang==0.5.24"]}, "sglang_env_packages",
                   "SGLang 0.5.24 is not a version specgate renders configs for"),
    "pin-0.5.23.post1": ({"sglang_env_packages": ["sglang==0.5.23.post1"]}, "sglang_env_packages",
                         "is a post-release of 0.5.23"),
    "release-0.5.22": ({"sglang_env_sglang_version": "0.5.22"}, "sglang_env_sglang_version",
                       "SGLang 0.5.22 is not a version specgate renders configs for"),
    # A stated release does not hide what pip installs: the pin is judged too, and must agree.
    "release-and-post-pin": ({"sglang_env_sglang_version": "0.5.23", "sglang_env_packages": ["sglang==0.5.23.post1"]},
                             "sglang_env_packages", "is a post-release of 0.5.23"),
    "release-and-other-pin": ({"sglang_env_sglang_version": "0.5.23", "sglang_env_packages": ["sglang == 0.5.19"]},
                              "sglang_env_sglang_version", "but sglang_env_packages pins sglang==0.5.19"),
    # No pin and no release given: nothing says which release's flags to render.
    "no-pin": ({"sglang_env_packages": ["flashinfer-python==0.7.2"]}, "sglang_env_sglang_version",
               "nothing says which SGLang release"),
    # 0.5.19's FlashInfer beside 0.5.23: pip would refuse the set on the host after downloading it.
    "companion-of-another-release": (
        {"sglang_env_packages": ["sglang==0.5.23", "flashinfer-python==0.6.18", "sglang-kernel==0.4.10"]},
        "sglang_env_packages", "or pin sglang==0.5.19, the release that pins flashinfer-python==0.6.18"),
}  # fmt: skip


@pytest.fixture(scope="module")
def pinned_runs(tmp_path_factory) -> dict[str, list[dict]]:
    """deploy.yml once over one copy of ct200 per pin (preflight_runner.run_on_copies_of_ct200), in check mode: were
    a refusal ever to go missing, the later stages could still not touch this machine. Each copy's events."""
    cases = {case: pin for case, (pin, _name, _reason) in PINS.items()}
    run = run_on_copies_of_ct200(tmp_path_factory.mktemp("pins"), cases, cmdline="--check")
    return {case: [e for e in run.events if e.get("event_data", {}).get("host") == case] for case in cases}


@pytest.mark.parametrize("case", list(PINS))
def test_unsupported_sglang_pin_is_refused_by_sglang_env_before_anything_changes(pinned_runs, case) -> None:
    _pin, name, reason = PINS[case]
    events = pinned_runs[case]
    failures = [e["event_data"] for e in events if e["event"] == "runner_on_failed"]
    assert len(failures) == 1, [f["res"].get("msg") for f in failures]
    assert failures[0]["role"] == "sglang_env"
    message = failures[0]["res"]["msg"]
    # Named as the user sets it: the pin, or the release given.
    assert message.splitlines()[1].startswith(f"- {name}:"), message
    assert reason in message, message
    assert [e for e in events if e["event"] == "runner_on_ok" and e["event_data"]["res"].get("changed")] == []
    stages_run = {e["event_data"].get("role") for e in events if e["event"] == "runner_on_ok"}
    # fleet_rollout: the rollout's read-only plan, deploy.yml's first play.
    assert stages_run <= {"fleet_rollout", "preflight", "cuda_toolkit", "sglang_env", None}
