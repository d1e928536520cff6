"""Progress off a terminal: log lines with done/total, rate and time left, ending at the total."""

from __future__ import annotations

import logging
import re

import pytest

from stackelberg.evaluation.tournament import play_matrix
from stackelberg.progress import INTERVAL_ENV, LOGGER, progress

COUNT = re.compile(r"(\d+)/(\d+)")


@pytest.fixture
def progress_lines(monkeypatch, caplog):
    """Every refresh logged (no interval); the log lines of ``stackelberg.progress``."""
    monkeypatch.setenv(INTERVAL_ENV, "0")
    monkeypatch.setattr("sys.stderr.isatty", lambda: False, raising=False)
    caplog.set_level(logging.INFO, logger=LOGGER.name)
    return lambda: [r.getMessage() for r in caplog.records if r.name == LOGGER.name]


def counts(lines: list[str], desc: str) -> list[tuple[int, int]]:
    return [tuple(map(int, COUNT.search(line).groups())) for line in lines if desc in line]


def test_a_bar_logs_each_count_up_to_the_total_with_rate_and_time_left(progress_lines):
    bar = progress(3, "label@onuw", "instance")
    for _ in range(3):
        bar.update(1)
    bar.close()
    lines = progress_lines()
    assert counts(lines, "label@onuw")[0] == (0, 3)
    assert counts(lines, "label@onuw")[-1] == (3, 3)
    done = [n for n, _ in counts(lines, "label@onuw")]
    assert done == sorted(done) and set(done) == {0, 1, 2, 3}
    assert "instance/s" in lines[-1] and "<" in lines[-1], lines[-1]  # rate, elapsed<left


def test_the_log_is_thinned_to_one_line_per_interval(monkeypatch, progress_lines):
    monkeypatch.setenv(INTERVAL_ENV, "3600")
    bar = progress(100, "grpo@onuw steps", "step")
    for _ in range(100):
        bar.update(1)
    bar.close()
    assert counts(progress_lines(), "grpo@onuw steps") == [(0, 100), (100, 100)]


def test_a_tournament_reports_each_finished_game(progress_lines):
    records = play_matrix("onuw", ["scripted"], range(3), opponent="random")
    seen = counts(progress_lines(), "onuw tournament")
    assert seen[0] == (0, len(records)) and seen[-1] == (len(records), len(records))
    assert sorted(set(n for n, _ in seen)) == list(range(len(records) + 1))
