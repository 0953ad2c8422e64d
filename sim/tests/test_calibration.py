"""The sim's default calibration reproduces the field-notes table within ±10 %."""

from __future__ import annotations

import pytest
from specgate_sim.calibrate import FIELD_NOTES, TOLERANCE, render, table, within


def test_default_calibration_reproduces_the_field_notes_table(capsys: pytest.CaptureFixture[str]) -> None:
    results = table()
    with capsys.disabled():
        print("\n" + render(results))
    failed = [row.label for row, _, ok in results if not ok]
    assert not failed, f"outside ±{TOLERANCE:.0%}: {failed}"


def test_bs16_budget32_accepts_more_than_budget16() -> None:
    by_label = {row.label: est for row, est, _ in table()}
    assert by_label["bs16 budget32 topk8"].accept_length > by_label["bs16 budget16 topk4"].accept_length


def test_the_tolerance_band_rejects_a_twenty_percent_miss() -> None:
    band = FIELD_NOTES[0].tok_s
    assert band is not None
    assert within(band[0] * 1.09, band)
    assert not within(band[0] * 1.2, band)
    assert not within(band[0] * 0.8, band)
