"""The most acceptance length a deployment can ever report, as the gate's settings check judges it before
anything runs: a spec_gate_min_accept_length above it can only fail, so it is refused up front."""

from __future__ import annotations

import pytest
from spec_gate import FilterModule

ceiling = FilterModule().filters()["spec_gate_accept_ceiling"]
pointer_id = FilterModule().filters()["spec_gate_pointer_id"]


@pytest.mark.parametrize(
    ("deployment", "most"),
    [
        # DFLASH: block - 1 drafted + the bonus token per verify step, + 1 for the first (prefill) token.
        ({"algorithm": "DFLASH", "block_size": 8}, 9),
        ({"algorithm": "DFLASH", "num_draft_tokens": 16}, 17),
        # DDTREE: the deepest path is min(block - 1, budget) nodes.
        ({"algorithm": "DDTREE", "block_size": 16, "ddtree_budget": 32}, 17),
        ({"algorithm": "DDTREE", "block_size": 16, "ddtree_budget": 4}, 6),
        # EAGLE family: num_steps deep, at most num_draft_tokens (the root counted).
        ({"algorithm": "EAGLE3", "num_steps": 3, "num_draft_tokens": 8}, 5),
        ({"algorithm": "NEXTN", "num_draft_tokens": 2}, 3),
    ],
)
def test_ceiling_is_the_verify_width_plus_the_first_token(deployment, most):
    result = ceiling(deployment)
    assert result["ceiling"] == most
    assert deployment["algorithm"] in result["why"]


@pytest.mark.parametrize(
    "deployment",
    [
        {"algorithm": "DFLASH", "block_size": None},  # the drafter's own block size decides, after the weights
        {"algorithm": "none"},
        {},
        {"algorithm": "EAGLE3"},
    ],
)
def test_unknown_width_is_not_judged(deployment):
    assert ceiling(deployment)["ceiling"] is None


def test_pointer_stat_names_the_release():
    assert pointer_id({"exists": True, "islnk": True, "lnk_target": "/opt/specgate/releases/dflash-bs8-1"}) == (
        "dflash-bs8-1"
    )
    assert pointer_id({"exists": True, "islnk": True, "lnk_source": "releases/kg"}) == "kg"
    assert pointer_id({"exists": False}) == ""
    assert pointer_id({"exists": True, "islnk": False}) == ""
