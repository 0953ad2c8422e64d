"""monitor/textfile.py: the served release's facts as exposition text, parsed back with prometheus_client's parser."""

from __future__ import annotations

from ansible.module_utils.specgate.monitor.textfile import textfile
from prometheus_client.parser import text_string_to_metric_families

GATE = {"release": "r-1", "action": "rollback", "analysis": {"metrics": [
    {"name": "accept_length", "threshold": 3.0, "interval": {"mean": 1.02}},
    {"name": "regression", "threshold": 0.5, "interval": {"mean": float("nan")}},  # one run: no mean to show
    {"name": "bad name!", "threshold": 1, "interval": {"mean": 1}},
]}}


def parsed(text: str) -> dict:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_a_failed_gate_is_written_as_not_passed_with_the_numbers_it_measured():
    written = parsed(textfile("r-1", "r", False, {"speculative-algorithm": "EAGLE3",
                                                 "speculative-num-draft-tokens": 4}, GATE))
    assert written[("specgate_gate_passed", (("release", "r-1"),))] == 0.0
    assert written[("specgate_gate_accept_length", (("release", "r-1"),))] == 1.02
    assert ("specgate_gate_regression", (("release", "r-1"),)) not in written
    assert [k for k in written if k[0] == "specgate_release_info"] == [
        ("specgate_release_info", (("algorithm", "EAGLE3"), ("block_size", "4"), ("known_good", "false"),
                                   ("profile", "r"), ("release", "r-1")))]
    assert not [k for k in written if "bad" in k[0]]


def test_a_gate_record_of_another_release_is_not_taken_for_the_served_ones():
    written = parsed(textfile("r-2", "r", True, {}, GATE))
    labels = (("algorithm", "none"), ("block_size", ""), ("known_good", "true"), ("profile", "r"), ("release", "r-2"))
    assert list(written) == [("specgate_release_info", labels)]


def test_the_text_is_the_same_for_the_same_facts():
    assert textfile("r-1", "r", True, {}, GATE) == textfile("r-1", "r", True, {}, dict(GATE))
