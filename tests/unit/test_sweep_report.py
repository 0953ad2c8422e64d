"""Sweep rows from benchmark results, winners per use case, and the report."""

from __future__ import annotations

import pytest
from ansible.module_utils.specgate.sweep.sweep_report import (
    failed_row,
    rejected_row,
    summarize,
    sweep_markdown,
    winners,
)


def cell(context_tokens, concurrency, tok_s, accept, set_name="code"):
    return {"set": set_name, "context": f"c{context_tokens}", "context_tokens": context_tokens,
            "concurrency": concurrency, "output_tok_s": tok_s, "accept_length_request": accept,
            "ttft": {"p50_ms": 100.0}}  # fmt: skip


def bench(cells_per_run, evals=None, algorithm="DFLASH"):
    evals = evals or [None] * len(cells_per_run)
    runs = [{"cells": cells, "eval": evals[i]} for i, cells in enumerate(cells_per_run)]
    return {"server": {"speculative_algorithm": algorithm}, "runs": runs}


def test_a_row_takes_each_use_case_from_its_corner_of_the_matrix_averaged_over_runs():
    run1 = [cell(1024, 1, 100.0, 3.0), cell(1024, 32, 2000.0, 3.1), cell(32768, 1, 80.0, 2.0),
            cell(32768, 32, 1500.0, 2.2)]  # fmt: skip
    run2 = [cell(1024, 1, 110.0, 3.2), cell(1024, 32, 2200.0, 3.3), cell(32768, 1, 90.0, 2.4),
            cell(32768, 32, 1700.0, 2.6)]  # fmt: skip
    evals = [{"passed": 23, "problems": 24}, {"passed": 24, "problems": 24}]
    row = summarize("bs8", "dflash-bs8-0123456789", bench([run1, run2], evals))
    assert row["speed_c1_short"] == pytest.approx(105.0)
    assert row["tok_s_cmax"] == pytest.approx((2000 + 1500 + 2200 + 1700) / 4)
    assert row["accept_long"] == pytest.approx((2.0 + 2.2 + 2.4 + 2.6) / 4)
    assert row["eval_pass_rate"] == pytest.approx(47 / 48)
    assert row["shape"] == {"shortest_context": 1024, "longest_context": 32768, "concurrency": [1, 32]}


def test_user_prompt_cells_without_a_context_length_are_left_out_and_only_them_is_an_error():
    user_only = [cell(None, 1, 50.0, 2.0, set_name="user")]
    with pytest.raises(ValueError, match="no cell with a context length"):
        summarize("x", "r", bench([user_only]))
    row = summarize("x", "r", bench([[*user_only, cell(2048, 1, 70.0, 2.5)]]))
    assert row["speed_c1_short"] == 70.0


def test_winners_skip_failed_configs_and_ties_go_to_the_earlier_config():
    rows = [
        {"name": "a", "release": "ra", "failed": False, "speed_c1_short": 100.0, "accept_long": 2.0,
         "tok_s_cmax": 900.0},
        failed_row("crash", "rc", "did not become ready"),
        {"name": "b", "release": "rb", "failed": False, "speed_c1_short": 100.0, "accept_long": 3.0,
         "tok_s_cmax": 800.0},
    ]
    best = winners(rows)
    assert (best["latency"]["name"], best["long_context"]["name"], best["throughput"]["name"]) == ("a", "b", "a")
    assert best["long_context"]["value"] == 3.0


def test_no_winner_when_every_config_failed_and_the_report_says_why():
    rows = [failed_row("crash", None, "CUDA out of memory")]
    best = winners(rows)
    assert all(w["name"] is None for w in best.values())
    text = sweep_markdown("s1", "ct200", rows, best)
    assert "| crash | — |" in text
    assert "FAILED: CUDA out of memory" in text
    for use_case in ("latency", "long_context", "throughput"):
        assert any(line.startswith(f"| {use_case}:") and line.endswith("| — | — | — |") for line in text.splitlines())


def test_a_failed_rows_journal_stays_out_of_the_table_and_follows_it_whole():
    # A crash on start fails with the journal's tail, one line per entry: in the cell it ended the table.
    reason = ("Release r1 failed: sglang.service did not become ready: the unit is activating (auto-restart).\n"
              "python[1]: torch.OutOfMemoryError: CUDA out of memory | FAULT\n"
              "systemd[1]: sglang.service: Failed with result 'exit-code'. Rolled back: r0 serves again.")  # fmt: skip
    rows = [failed_row("crash", "r1", reason), failed_row("oom", None, "CUDA out of memory | on GPU 0")]
    text = sweep_markdown("s1", "ct200", rows, winners(rows))
    table = [line for line in text.splitlines() if line.startswith("| crash |") or line.startswith("| oom |")]
    assert table == [
        "| crash | r1 | — | — | — | — | — | — | FAILED: Release r1 failed: sglang.service did not become ready: "
        "the unit is activating (auto-restart). (the whole reason under Failed, below) |",
        "| oom | — | — | — | — | — | — | — | FAILED: CUDA out of memory \\| on GPU 0 |",
    ]
    # Every line of the table section is a table row: nothing of the journal leaks between the rows.
    config_table = "| config |" + text.split("| config |", 1)[1].split("\n\n", 1)[0]
    assert all(line.startswith("|") for line in config_table.splitlines()), config_table
    failed = text.split("## Failed\n", 1)[1]
    assert failed.startswith("\n### crash\n\n```text\n" + reason + "\n```")
    assert "### oom" not in failed, "a one-line reason is whole in its cell"


def test_the_rows_that_stand_are_the_last_of_each_config_and_none_still_started():
    from ansible.module_utils.specgate.sweep.sweep_report import current_rows

    rows = [{"name": "a", "status": "started"}, {"name": "b", "status": "ok", "failed": False},
            {"name": "a", "status": "ok", "failed": False, "redo": True},
            {"name": "c", "status": "started"}]  # fmt: skip
    assert current_rows(rows) == [rows[1], rows[2]]


def _ran(name, block, trained, drafter, tok_s):
    return {"name": name, "release": f"r-{name}", "failed": False, "status": "ok", "cost": [block],
            "point": {"block_size": block, "drafter": drafter}, "vars": {"sglang_service_block_size": block},
            "trained_block_size": trained, "speed_c1_short": tok_s, "accept_long": 3.0, "tok_s_cmax": tok_s * 8,
            "ttft_p50_ms_c1_short": 50.0, "eval_pass_rate": None, "speculative_algorithm": "DFLASH",
            "drafter": {**(drafter or {}), "path": f"/models/{name}"}}  # fmt: skip


def test_each_winner_names_its_drafter_and_trained_block_and_a_block_that_differs_is_out_of_distribution():
    """Issue 17: per-point drafters; the report says which drafter each winner ran on and its trained block size."""
    from ansible.module_utils.specgate.sweep.sweep_report import (
        inventory_snippet,
        ood_warning,
        robust_winners,
        sweep_document,
        sweep_report_markdown,
    )

    b16 = {"name": "dflash-b16", "repo": "org/d16", "revision": "r16", "local_path": None}
    rows = [_ran("bs16-on-b16", 16, 16, b16, 200.0),
            _ran("bs8-on-b16", 8, 16, b16, 100.0),
            _ran("bs16-inline", 16, 8, {"name": None, "repo": "org/d8", "revision": "r8", "local_path": None}, 90.0)]
    best = robust_winners(rows)
    markdown = sweep_report_markdown("s", "h", rows, best)
    latency = markdown.split("## latency: bs16-on-b16\n", 1)[1].split("## ", 1)[0]
    assert "- drafter dflash-b16 (org/d16@r16), trained block size 16\n" in latency
    assert "WARNING" not in latency
    assert ood_warning(rows[0]) is None
    assert ood_warning(rows[1]) == ("block size 8 differs from the drafter's trained block size 16: out of "
                                    "distribution, a drafter trained at 8 may accept more")  # fmt: skip
    assert ood_warning(rows[2]).startswith("block size 16 is past the drafter's trained block size 8")
    assert "model_weights_drafter: dflash-b16" in inventory_snippet(rows[0])
    assert "model_weights_drafter_repo: org/d8" in inventory_snippet(rows[2])
    winner = sweep_document("s", "h", rows, best)["winners"]["latency"]
    assert winner["drafter"]["name"] == "dflash-b16"
    assert winner["trained_block_size"] == 16


@pytest.mark.parametrize(
    ("by", "said"),
    [("sglang", "SGLang rejected it: "), ("settings", "specgate's settings check refused it: "),
     ("fit", "specgate's GPU fit refused it: ")],
)
def test_a_refused_points_row_says_who_refused_it(by, said):
    row = rejected_row("bs8-b4-t4", {"algorithm": "DDTREE"}, "the message", by)
    assert row["reason"] == said + "the message"
    assert (row["status"], row["rejected_by"], row["release"]) == ("rejected", by, "")
    with pytest.raises(ValueError, match="by 'someone' is not one of sglang, settings, fit"):
        rejected_row("bs8-b4-t4", None, "the message", "someone")
