"""Filters: the gate's benchmark settings judged on the controller, before anything on the host changes.

The benchmark refuses settings it cannot run (bench_runner.validate) only when it starts, which is after the
service switched to the candidate: judged that late, a bad setting leaves an ungated candidate serving. So the
same function judges them here first (playbooks run this through spec_gate's settings entry).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ansible_collections.specgate.project.plugins.module_utils.paths  # noqa: F401 - module_utils on the path
from ansible.module_utils.specgate.gate.bench_client import BenchError
from ansible.module_utils.specgate.gate.bench_prompts import USER_SET, Prompt
from ansible.module_utils.specgate.gate.bench_runner import BenchSettings, validate
from ansible.module_utils.specgate.gate.gate_metrics import (
    VARIABLE_PREFIX,
    same_thresholds,
    threshold_keys,
    threshold_refusal,
)


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


def _positive(value: Any) -> int | None:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 and not isinstance(value, bool) else None


def spec_gate_accept_ceiling(deployment: dict[str, Any]) -> dict[str, Any]:
    """`{{ {algorithm, block_size, num_draft_tokens, num_steps, ddtree_budget} | spec_gate_accept_ceiling }}` →
    ``{ceiling, why}``: the highest acceptance length a speculative deployment can ever report, or ceiling null
    when the deployment does not say (SGLang then takes the drafter's own block size, known after the weights).

    A verify step commits at most the drafted depth + 1 (the bonus token): block size for DFLASH (block - 1
    drafted), min(block - 1, budget) + 1 for DDTREE, num_steps + 1 (at most num_draft_tokens) for EAGLE3/NEXTN.
    Per-request acceptance is completion_tokens / verify steps, and the first token comes from prefill, not a
    verify step, so a short request may report up to 1 more: the ceiling is that width + 1 (issue 12: "above the
    block size + 1").
    """
    algorithm = str(deployment.get("algorithm") or "none").upper()
    block = _positive(deployment.get("block_size")) or (
        _positive(deployment.get("num_draft_tokens")) if algorithm in ("DFLASH", "DDTREE") else None
    )
    if algorithm == "DFLASH" and block:
        width, why = block, f"sglang_service_block_size (or num_draft_tokens) {block}"
    elif algorithm == "DDTREE" and (block or _positive(deployment.get("ddtree_budget"))):
        depths = [d for d in (block - 1 if block else None, _positive(deployment.get("ddtree_budget"))) if d]
        width = min(depths) + 1
        why = f"sglang_service_block_size {block} and sglang_service_ddtree_budget {deployment.get('ddtree_budget')}"
    elif algorithm in ("EAGLE3", "NEXTN", "EAGLE") and (
        _positive(deployment.get("num_steps")) or _positive(deployment.get("num_draft_tokens"))
    ):
        widths = [
            w
            for w in (
                _positive(deployment.get("num_steps")) and _positive(deployment.get("num_steps")) + 1,
                _positive(deployment.get("num_draft_tokens")),
            )
            if w
        ]
        width = min(widths)
        why = (
            f"sglang_service_num_steps {deployment.get('num_steps')} and sglang_service_num_draft_tokens "
            f"{deployment.get('num_draft_tokens')}"
        )
    else:
        return {"ceiling": None, "why": ""}
    return {
        "ceiling": width + 1,
        "why": (
            f"{algorithm} with {why} commits at most {width} tokens per verify step (bonus included), and a request's "
            f"acceptance length counts at most 1 more (its first token comes from prefill)"
        ),
    }


def spec_gate_pointer_id(stat: dict[str, Any]) -> str:
    """A release pointer's stat (`ansible.builtin.stat`) → the release id it names; '' when it is no symlink."""
    if not stat or not stat.get("islnk"):
        return ""
    return Path(str(stat.get("lnk_target") or stat.get("lnk_source") or "")).name


def spec_gate_metric_means(metrics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`{{ analysis.metrics | spec_gate_metric_means }}` → each metric's name, condition, phase and measured mean:
    the numbers a fleet report shows beside a host's verdict."""
    return [
        {
            "name": m.get("name"),
            "success_condition": m.get("success_condition"),
            "phase": m.get("phase"),
            "mean": (m.get("interval") or {}).get("mean"),
        }
        for m in metrics or []
    ]


def spec_gate_threshold_variables(names: list[str]) -> list[str]:
    """`{{ query('ansible.builtin.varnames', '^spec_gate_') | spec_gate_threshold_variables }}` → the variables of
    the gate's metric registry (gate_metrics.GATE_METRICS) among ``names``, in the registry's order."""
    wanted = [VARIABLE_PREFIX + key for key in threshold_keys()]
    return [name for name in wanted if name in set(names)]


def spec_gate_threshold_refusal(thresholds: dict[str, Any]) -> str:
    """`{{ _spec_gate_thresholds | spec_gate_threshold_refusal }}` → '' or the first threshold out of its range."""
    return threshold_refusal(thresholds)


def spec_gate_same_thresholds(stored: dict[str, Any] | None, thresholds: dict[str, Any]) -> bool:
    """`{{ gate_json.thresholds | spec_gate_same_thresholds(_spec_gate_thresholds) }}` → judged with these?"""
    return same_thresholds(stored, thresholds)


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "spec_gate_bench_refusal": spec_gate_bench_refusal,
            "spec_gate_accept_ceiling": spec_gate_accept_ceiling,
            "spec_gate_pointer_id": spec_gate_pointer_id,
            "spec_gate_metric_means": spec_gate_metric_means,
            "spec_gate_threshold_variables": spec_gate_threshold_variables,
            "spec_gate_threshold_refusal": spec_gate_threshold_refusal,
            "spec_gate_same_thresholds": spec_gate_same_thresholds,
        }

