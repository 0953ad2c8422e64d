"""spec_sweep_grid: axes and constraints expand into named points; bad input is refused naming the axis."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible.module_utils.specgate.sweep.grid import Drafter, GridError, drafters, expand

ROOT = Path(__file__).resolve().parents[2]


def test_the_field_notes_grid_expands_to_the_field_notes_points():
    grid = yaml.safe_load((ROOT / "tests/fixtures/sweeps/field-notes-grid.yml").read_text())["spec_sweep_grid"]
    points = expand(grid)
    names = [p.name for p in points]
    assert len(points) == 18
    assert names[:2] == ["bs8-b4-t4-w2048", "bs8-b4-t4"]
    assert names[-2:] == ["bs16-b16-t4", "bs16-b32-t8"]
    b8 = next(p for p in points if p.name == "bs8-b8-t4")
    assert b8.service_vars() == {"sglang_service_algorithm": "DDTREE", "sglang_service_block_size": 8,
                                 "sglang_service_ddtree_budget": 8, "sglang_service_ddtree_topk": 4,
                                 "sglang_service_draft_window": None, "sglang_service_num_steps": None,
                                 "sglang_service_eagle_topk": None,
                                 "sglang_service_num_draft_tokens": None}  # fmt: skip
    assert b8.cost() < next(p for p in points if p.name == "bs8-b8-t6").cost()


def test_parallel_presets_and_drafters_are_carried_and_every_drafter_listed_once():
    grid = [
        {"axes": {"block_size": [8], "budget": [8], "topk": [4], "parallel": ["tp8", "tp4"]},
         "parallel_presets": {"tp8": {"sglang_service_tp_size": 8}, "tp4": {"sglang_service_tp_size": 4}},
         "drafter": {"repo": "org/d8", "revision": "abc"}},
        {"axes": {"algorithm": ["DFLASH"], "block_size": [16]}, "drafter": {"repo": "org/d16"}},
    ]  # fmt: skip
    points = expand(grid)
    assert [p.name for p in points] == ["bs8-b8-t4-tp8", "bs8-b8-t4-tp4", "dflash-bs16"]
    assert points[1].service_vars()["sglang_service_tp_size"] == 4
    assert drafters(points) == [Drafter("org/d8", "abc"), Drafter("org/d16", None)]


@pytest.mark.parametrize(
    ("grid", "message"),
    [
        ({"axes": {"block_size": [8], "depth": [3]}}, r"spec_sweep_grid\[0\]\.axes\.depth: unknown axis"),
        ({"axes": {"block_size": [8], "budget": []}}, r"axes\.budget: give a non-empty list"),
        ({"axes": {"block_size": [8], "budget": [0]}}, r"axes\.budget: 0 is not a positive integer"),
        ({"axes": {"block_size": [8], "window": ["big"]}}, r"axes\.window: 'big' is not a window"),
        ({"axes": {"block_size": [8, 8]}}, r"axes\.block_size: values repeat"),
        ({"axes": {"budget": [8]}}, r"axes\.block_size: missing"),
        ({"axes": {"algorithm": ["MEDUSA"], "block_size": [8]}}, r"axes\.algorithm: 'MEDUSA' is not one of"),
        ({"axes": {"block_size": [8], "budget": [4]}, "constraints": ["budget >"]}, r"constraints: 'budget >' is not"),
        ({"axes": {"block_size": [8], "budget": [4]}, "constraints": ["depth > 1"]}, r"not an axis"),
        ({"axes": {"block_size": [8], "budget": [4]}, "constraints": ["budget > 4"]}, r"no point .* meets"),
        ({"axes": {"block_size": [8], "parallel": ["tp8"]}}, r"axes\.parallel: preset 'tp8' is not in"),
        ({"axes": {"block_size": [8]}, "drafter": {"repo": "nope"}}, r"\.drafter\.repo: 'nope' is not a hub repo"),
        ({"axes": {"block_size": [8]}, "drafter": {"revision": "abc"}}, r"\.drafter: give the name of an entry"),
        ({"axes": {"block_size": [8]}, "drafter": "b 8"}, r"\.drafter\.name: 'b 8' is not a drafter's name"),
        ({"axes": {"block_size": [8]}, "drafter": {"name": "b8", "path": "/x"}}, r"unknown key\(s\) path"),
        ({"axes": {"block_size": [8], "drafter": ["b8"]}, "drafter": "b16"}, r"a drafter axis and a drafter for"),
        ({"axes": {"block_size": [8]}, "drafter": "b8", "vars": {"sglang_service_drafter_path": "/models/d"}},
         r"sglang_service_drafter_path set beside the sub-grid's drafter"),
        ({"axes": {"block_size": [8]}, "vars": {"model_weights_dir": "/x"}}, r"\.vars: model_weights_dir cannot"),
        ({"axes": {"block_size": [8]}, "colour": 1}, r"unknown key\(s\) colour"),
        ([], r"spec_sweep_grid: empty"),
        ([{"axes": {"block_size": [8]}}, {"axes": {"block_size": [8]}}], r"point .* comes out of two sub-grids"),
        ({"axes": {"algorithm": ["none"], "block_size": [8]}},
         r"axes: block_size do not apply to algorithm none \(it takes no axis but parallel\)"),
        ({"axes": {"algorithm": ["EAGLE3"], "num_steps": [3], "budget": [8]}},
         r"budget do not apply to algorithm EAGLE3 \(it takes drafter, eagle_topk, num_draft_tokens, num_steps\)"),
        ({"axes": {"algorithm": ["DFLASH"], "block_size": [8], "num_steps": [3]}},
         r"num_steps do not apply to algorithm DFLASH"),
        ({"axes": {"algorithm": ["none"]}, "drafter": "b8"}, r"\.drafter: a drafter for algorithm none"),
        ({"axes": {"algorithm": ["EAGLE3"], "num_steps": [0]}}, r"axes\.num_steps: 0 is not a positive integer"),
    ],
)
def test_bad_grids_are_refused_naming_the_entry_and_the_axis(grid, message):
    with pytest.raises(GridError, match=message):
        expand(grid)


def test_a_drafter_axis_names_each_point_by_its_drafter_and_constraints_read_it():
    """Issue 17: a grid axis may set the drafter, by catalog name or {repo, revision}; the point's name says which."""
    points = expand({"axes": {"algorithm": ["DFLASH"], "block_size": [8, 16],
                              "drafter": ["dflash-b8", {"repo": "org/kimi_dflash-b16", "revision": "abc"}]},
                     "constraints": ["(block_size == 8) == (drafter == 'dflash-b8')"]})  # fmt: skip
    assert [p.name for p in points] == ["dflash-bs8-dflash-b8", "dflash-bs16-kimi-dflash-b16"]
    assert points[0].drafter == Drafter(name="dflash-b8")
    assert points[1].drafter == Drafter("org/kimi_dflash-b16", "abc")
    assert points[1].key()["drafter"] == {"name": None, "repo": "org/kimi_dflash-b16", "revision": "abc",
                                          "local_path": None}  # fmt: skip


def test_a_sub_grid_drafter_by_name_is_carried_without_renaming_the_points():
    points = expand({"axes": {"algorithm": ["DFLASH"], "block_size": [16]}, "drafter": "dflash-b16"})
    assert [(p.name, p.drafter) for p in points] == [("dflash-bs16", Drafter(name="dflash-b16"))]


def test_constraints_keep_only_the_points_where_all_hold():
    points = expand({"axes": {"block_size": [16], "budget": [16, 32], "topk": [4, 8]},
                     "constraints": ["topk * 4 == budget"]})  # fmt: skip
    assert [p.name for p in points] == ["bs16-b16-t4", "bs16-b32-t8"]


def test_baselines_and_other_algorithms_are_grid_points_beside_ddtree():
    grid = [
        {"name": "baseline", "axes": {"algorithm": ["none"]}},
        {"name": "chain", "axes": {"algorithm": ["DFLASH"], "block_size": [8]}},
        {"name": "eagle", "axes": {"algorithm": ["EAGLE3"], "num_steps": [3, 5], "eagle_topk": [1],
                                   "num_draft_tokens": [4]}, "drafter": {"repo": "org/eagle3", "revision": "e1"}},
        {"name": "mtp", "axes": {"algorithm": ["NEXTN"], "num_steps": [1]}},
        {"name": "tree", "axes": {"block_size": [8], "budget": [8], "topk": [4]}},
    ]  # fmt: skip
    points = {p.name: p for p in expand(grid)}
    assert list(points) == ["nospec", "dflash-bs8", "eagle3-s3-k1-d4", "eagle3-s5-k1-d4", "mtp-s1", "bs8-b8-t4"]
    nospec = points["nospec"]
    # Every other speculative setting null: the inventory's (a DFLASH block size, its drafter) must not reach it.
    assert nospec.service_vars()["sglang_service_algorithm"] == "none"
    assert {v for k, v in nospec.service_vars().items() if k != "sglang_service_algorithm"} == {None}
    assert "sglang_service_drafter_path" in nospec.service_vars()
    assert nospec.drafter is None
    assert min(points.values(), key=lambda p: p.cost()).name == "nospec"  # the cheapest: verifies one token
    eagle = points["eagle3-s5-k1-d4"]
    assert eagle.service_vars()["sglang_service_num_steps"] == 5
    assert eagle.service_vars()["sglang_service_num_draft_tokens"] == 4
    assert eagle.service_vars()["sglang_service_block_size"] is None
    assert eagle.key()["num_steps"] == 5 and "num_steps" not in points["bs8-b8-t4"].key()  # noqa: PT018
    assert eagle.drafter == Drafter("org/eagle3", "e1")
    # Each baseline or EAGLE3/NEXTN point is a branch of its own: the search launches it, no climb passes it by.
    assert len({p.branch() for p in points.values()}) == len(points)
