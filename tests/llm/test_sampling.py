"""The local backend's sampler and stop handling (no model needed)."""

from __future__ import annotations

import pytest
import torch

from stackelberg.llm.local import cut_at_stop, sample_seed, sample_tokens


def gens(seeds):
    return [torch.Generator().manual_seed(s) for s in seeds]


def test_a_rows_token_does_not_depend_on_the_batch():
    torch.manual_seed(0)
    logits = torch.randn(6, 5000) * 4
    logits[2] = 0.0  # flat: its top-k does not hold top_p, so it takes the full-sort path
    temps, tops = [0.9, 0.9, 0.9, 0.0, 1.2, 0.5], [0.9, 0.5, 0.9, 0.9, 1.0, 0.9]
    batch = sample_tokens(logits, temps, tops, gens(range(6)), top_k=64)
    alone = [
        int(
            sample_tokens(logits[i : i + 1], temps[i : i + 1], tops[i : i + 1], gens([i]), top_k=64)
        )
        for i in range(6)
    ]
    assert batch.tolist() == alone
    assert alone[3] == int(logits[3].argmax())  # temperature 0 in a sampled batch: greedy


def test_top_p_keeps_only_the_nucleus_and_temperature_zero_is_greedy():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    picks = {int(sample_tokens(logits, [1.0], [0.7], gens([s]))) for s in range(200)}
    assert picks == {0, 1}  # 0.5 + 0.3 covers 0.7; tokens 2 and 3 are cut
    assert sample_tokens(logits, [0.0], [0.9], gens([0])).tolist() == [0]


def test_cut_at_stop_and_seeds():
    assert cut_at_stop("a. b! c", [".", "!"]) == ("a", True)
    assert cut_at_stop("a! b. c", [".", "!"]) == ("a", True)
    assert cut_at_stop("abc", ["x", ""]) == ("abc", False)
    assert len({sample_seed(1, 0), sample_seed(1, 1), sample_seed(2, 0)}) == 3


def test_own_work_does_not_count_as_other_processes_load():
    """Known tick counts, not the live machine (its load comes and goes with other work)."""
    from stackelberg.llm.local import busy_cores_elsewhere

    # 2 cores, 200 ticks pass: 180 busy of which 160 are ours -> 20 ticks of others'.
    assert busy_cores_elsewhere((1000, 400, 50), (1200, 580, 210), cores=2) == pytest.approx(0.2)
    # All the busy time is our own: nobody else is busy.
    assert busy_cores_elsewhere((0, 0, 0), (200, 200, 200), cores=2) == 0.0
    # Another process held one core the whole time while we held the other.
    assert busy_cores_elsewhere((0, 0, 0), (200, 200, 100), cores=2) == pytest.approx(1.0)
    assert busy_cores_elsewhere((5, 5, 5), (5, 5, 5), cores=2) == 0.0  # no time passed
