"""The bracketing search: climbs each use case from the cheapest point, prunes dominated branches, finds the
exhaustive grid's winners with fewer launches."""

from __future__ import annotations

import pytest
from ansible.module_utils.specgate.sweep.grid import expand
from ansible.module_utils.specgate.sweep.search import FAILED, neighbour, propose
from sweep_fakes import bench_script, lattice, synthetic_row


def test_neighbours_follow_the_ordered_axes_and_a_constraint_that_ties_them():
    points = lattice()
    branch = [p for p in points if p.window is None]
    here = next(p for p in branch if p.name == "bs8-b8-t4")
    assert neighbour(here, branch, "budget", 1).name == "bs8-b12-t4"
    assert neighbour(here, branch, "budget", -1).name == "bs8-b4-t4"
    assert neighbour(here, branch, "topk", 1).name == "bs8-b8-t6"
    coupled = expand({"axes": {"block_size": [16], "budget": [16, 32], "topk": [4, 8]},
                      "constraints": ["topk * 4 == budget"]})  # fmt: skip
    assert neighbour(coupled[0], coupled, "budget", 1).name == "bs16-b32-t8"


def test_the_first_proposal_is_each_branch_cheapest_point():
    proposal = propose(lattice(), {})
    assert [p.name for p in proposal.points] == ["bs8-b4-t4-w2048", "bs8-b4-t4"]


@pytest.mark.parametrize("peak", [4, 8, 12, 16])
def test_search_finds_the_exhaustive_winners_with_fewer_launches(peak):
    script = bench_script()
    points = lattice()
    exhaustive = script.run_mode(points, lambda p: synthetic_row(p, peak=peak), search=False, tolerance=0.01)
    search = script.run_mode(points, lambda p: synthetic_row(p, peak=peak), search=True, tolerance=0.01)
    assert len(exhaustive.launches) == 16
    assert script.winner_names(search) == script.winner_names(exhaustive)
    assert script.winner_names(search)["latency"] == f"bs8-b{peak}-t4"
    assert len(search.launches) < len(exhaustive.launches)
    assert "ddtree bs8 window 2048" in search.pruned


def test_a_failed_point_counts_as_measured_and_worst():
    points = lattice()
    scores = {"bs8-b4-t4": {"speed_c1_short": FAILED}, "bs8-b4-t4-w2048": {"speed_c1_short": FAILED}}
    wanted = [p.name for p in propose(points, scores).points]
    assert "bs8-b4-t4" not in wanted
    assert "bs8-b8-t4" in wanted


def test_a_flat_step_is_said_as_a_possible_miss():
    points = expand({"axes": {"block_size": [8], "budget": [4, 8, 12]}})
    scores = {"bs8-b4": {"u": 100.0}, "bs8-b8": {"u": 100.0}}
    proposal = propose(points, scores)
    assert proposal.points == ()
    assert any("flat within 1%" in n and "bs8-b12" in n for n in proposal.notes)


def test_a_branch_is_not_pruned_because_its_shared_point_crashed():
    points = lattice()
    good = synthetic_row(next(p for p in points if p.name == "bs8-b4-t4"))
    scores = {"bs8-b4-t4-w2048": {"speed_c1_short": FAILED, "accept_long": FAILED, "tok_s_cmax": FAILED},
              "bs8-b4-t4": {m: good["per_run"][m][0] for m in good["per_run"]}}  # fmt: skip
    proposal = propose(points, scores)
    assert proposal.pruned == {}
    assert "bs8-b8-t4-w2048" in [p.name for p in proposal.points]


def test_a_branch_beaten_on_every_use_case_at_a_shared_point_is_pruned():
    points = lattice()
    rows = {p.name: synthetic_row(p) for p in points if p.name in ("bs8-b4-t4", "bs8-b4-t4-w2048")}
    scores = {name: {m: row["per_run"][m][0] for m in row["per_run"]} for name, row in rows.items()}
    proposal = propose(points, scores)
    assert proposal.pruned == {"ddtree bs8 window 2048": "dominated on every use case by bs8-b4-t4 at the same "
                                                         "budget and top-k"}  # fmt: skip
    assert all(p.window is None for p in proposal.points)
