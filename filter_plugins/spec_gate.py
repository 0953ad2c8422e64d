"""Filters: the gate's benchmark settings judged on the controller, before anything on the host changes.

The benchmark refuses settings it cannot run (bench_runner.validate) only when it starts, which is after the
service switched to the candidate: judged that late, a bad setting leaves an ungated candidate serving. So the
same function judges them here first (playbooks run this through spec_gate's settings entry).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ansible.module_utils

# As in sglang_config.py: a controller-side plugin puts the project's module_utils on the package path itself.
_PROJECT_MODULE_UTILS = str(Path(__file__).resolve().parent.parent / "module_utils")
if _PROJECT_MODULE_UTILS not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_PROJECT_MODULE_UTILS)

from ansible.module_utils.specgate.bench_client import BenchError  # noqa: E402 - needs the path set above
from ansible.module_utils.specgate.bench_prompts import USER_SET, Prompt  # noqa: E402
from ansible.module_utils.specgate.bench_runner import BenchSettings, validate  # noqa: E402


def spec_gate_bench_refusal(settings: dict[str, Any]) -> str:
    """`{{ {...spec_gate_bench_* settings...} | spec_gate_bench_refusal }}` → '' when the benchmark can run them,
    else the benchmark's own refusal, naming the variable and the fix.

    The user prompt file and the host venv's Python are judged where they live (the controller's file by the
    settings entry, the venv by the benchmark), so stand-ins take their place here.
    """
    contexts = settings.get("contexts") or []
    try:
        parsed = tuple((str(c["name"]), int(c["tokens"])) for c in contexts)
    except (KeyError, TypeError, ValueError):
        return f"spec_gate_bench_contexts entries must each be {{name, tokens}} with integer tokens, got {contexts}"
    sets = tuple(settings.get("sets") or ())
    user_stand_in = (Prompt(set=USER_SET, index=0, text="stand-in", target_tokens=None),) if USER_SET in sets else ()
    try:
        validate(
            BenchSettings(
                port=1,
                sets=sets,
                user_prompts=user_stand_in,
                contexts=parsed,
                concurrency=tuple(int(c) for c in settings.get("concurrency") or ()),
                output_tokens=int(settings.get("output_tokens", 1)),
                runs=int(settings.get("runs", 1)),
                eval_problems=tuple(settings.get("eval_problems") or ()),
            )
        )
    except (BenchError, ValueError) as error:
        return str(error)
    return ""


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"spec_gate_bench_refusal": spec_gate_bench_refusal}

