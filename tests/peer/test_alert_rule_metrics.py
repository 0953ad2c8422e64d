"""Every metric specgate's alert rules read is one SGLang 0.5.23 exports (read from the wheel's own source: the
name= of its prometheus_client metrics), one sglang-router 0.3.2 exports (named in its compiled extension), or one
specgate writes itself (monitor/textfile.py, the rules' own records), so no rule watches a series that never exists.
Needs the resolver venv (scripts/setup_sglang_resolver_venv)."""

from __future__ import annotations

import re
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

from ansible.module_utils.specgate.gate.gate_metrics import GATE_METRICS
from ansible.module_utils.specgate.monitor.textfile import PREFIX
from resolver_cases import require_resolver_venv

RULES = Path(__file__).resolve().parents[2] / "roles" / "sglang_monitoring" / "templates" / "specgate-rules.yml.j2"


def rules_text() -> str:
    """The rules template without its comments (which name families in prose)."""
    return "\n".join(line for line in RULES.read_text().splitlines() if not line.lstrip().startswith("#"))


def sglang_metric_names(version: str = "0.5.23") -> set[str]:
    source = require_resolver_venv() / "versions" / version / "sglang" / "srt"
    assert source.is_dir(), f"{source} is missing: run scripts/setup_sglang_resolver_venv {version}"
    names = set()
    for path in source.rglob("*.py"):
        names |= set(re.findall(r'name="(sglang:[a-z0-9_]+)"', path.read_text(errors="replace")))
    return names


def test_every_sglang_metric_the_rules_read_is_one_sglang_0_5_23_exports() -> None:
    read = set(re.findall(r"\bsglang:[a-z0-9_]+", rules_text()))
    assert {"sglang:generation_tokens_total", "sglang:spec_verify_calls_total"} <= read
    exported = sglang_metric_names()
    assert len(exported) > 50, "the wheel's metric definitions were not found"
    assert read - exported == set()


def test_every_specgate_metric_the_rules_read_is_one_specgate_writes_or_records() -> None:
    text = rules_text()
    read = set(re.findall(r"\bspecgate[_:][a-z0-9_]+", text))
    recorded = set(re.findall(r"record: (specgate:[a-z0-9_]+)", text))
    written = {PREFIX + "release_info", PREFIX + "gate_passed", PREFIX + "gate_threshold"} | {
        f"{PREFIX}gate_{metric.name}" for metric in GATE_METRICS}
    assert read - recorded - written == set(), read - recorded - written


def test_every_router_metric_the_rules_read_is_one_sglang_router_0_3_2_exports() -> None:
    """The router is Rust: its metric names are strings in sglang_router_rs (the controller venv's sglang-router,
    requirements/controller.txt)."""
    read = set(re.findall(r"\bsmg_[a-z0-9_]+", rules_text()))
    assert "smg_worker_health" in read
    # By its distribution's files: the import name is shadowed by filter_plugins/sglang_router.py on the test path.
    try:
        router = distribution("sglang-router")
    except PackageNotFoundError:
        raise AssertionError("sglang-router is not installed: run scripts/bootstrap") from None
    (extension,) = [file for file in router.files or [] if file.name.startswith("sglang_router_rs")]
    binary = Path(router.locate_file(extension)).read_bytes()
    assert b"smg_worker_pool_size" in binary, "the router's metric names were not found in its extension"
    assert {name for name in read if name.encode() not in binary} == set()
