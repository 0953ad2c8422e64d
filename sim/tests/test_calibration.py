"""The sim's default calibration reproduces the field-notes table within ±10 %."""

from __future__ import annotations

import pytest
from specgate_sim.calibrate import FIELD_NOTES, TOLERANCE, render, simulate, table, within
from specgate_sim.specmodel import SpecConfig, estimate


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


def test_a_short_simulated_run_reproduces_the_table_too(capsys: pytest.CaptureFixture[str]) -> None:
    results = table(run=True)
    with capsys.disabled():
        print("\n" + render(results, "short simulated run"))
    failed = [row.label for row, _, ok in results if not ok]
    assert not failed, f"outside ±{TOLERANCE:.0%}: {failed}"


def test_the_engine_measures_what_the_model_expects() -> None:
    for (row, expected, _), (_, measured, _) in zip(table(), table(run=True), strict=True):
        assert measured.accept_length == pytest.approx(expected.accept_length, rel=0.04), row.label
        assert measured.tokens_per_s == pytest.approx(expected.tokens_per_s, rel=0.04), row.label


def test_a_different_seed_changes_the_draws_not_the_calibration() -> None:
    cfg = FIELD_NOTES[0].cfg
    first, second = simulate(cfg, seed=1), simulate(cfg, seed=2)
    assert first != second
    assert first.accept_length == pytest.approx(second.accept_length, rel=0.05)
    assert simulate(cfg, seed=1) == first


def test_b300_profile_speeds_dflash_up_about_2_15_times() -> None:
    by_label = {row.label: est for row, est, _ in table()}
    speedup = by_label["b300: DFlash bs8"].tokens_per_s / by_label["b300: no speculation (303 / 2.15)"].tokens_per_s
    assert speedup == pytest.approx(2.15, rel=TOLERANCE)
    ct200 = estimate(SpecConfig("DFLASH", 8, 8, 7, 1))  # PCIe: verifying costs relatively more
    assert ct200.tokens_per_s / by_label["no speculation (TP8)"].tokens_per_s < speedup
