"""The pipeline ends with where its time went: each stage's wall time, slowest first, and
the memory peak."""

from __future__ import annotations

from flows.pipeline import stage_time_table


def test_stage_times_are_listed_slowest_first_with_their_total():
    table = stage_time_table(
        [("label@onuw", 24.3, 1.25), ("grpo@onuw", 158.1, 3.5), ("report", 1.5, 3.5)]
    )
    lines = table.splitlines()
    assert lines[0].split()[:3] == ["stage", "wall", "s"]
    assert [line.split() for line in lines[2:]] == [
        ["grpo@onuw", "158.1", "3.50"],
        ["label@onuw", "24.3", "1.25"],
        ["report", "1.5", "3.50"],
        ["total", "183.9", "3.50"],
    ]
