"""The local backend's sampler and stop handling (no model needed)."""

from __future__ import annotations

import pytest
import torch

from stackelberg.llm.local import cut_at_stop, row_uniforms, sample_seed, sample_tokens


def uniforms(seeds, step=0):
    """Each row's number at ``step``, its key that of sample 0 of a request seeded so."""
    return row_uniforms(torch.tensor([sample_seed(s, 0) for s in seeds]), step)


def test_a_rows_token_does_not_depend_on_the_batch():
    """The same request alone and in a batch of 8, whatever path each row takes."""
    torch.manual_seed(0)
    logits = torch.randn(8, 5000) * 4
    logits[2] = 0.0  # flat: its top-k does not hold top_p, so it takes the full-sort path
    logits[6] = torch.randn(5000) * 0.1  # near flat at top_p 1: the whole vocabulary, unsorted
    temps = [0.9, 0.9, 0.9, 0.0, 1.2, 0.5, 1.0, 0.7]
    tops = [0.9, 0.5, 0.9, 0.9, 1.0, 0.9, 1.0, 0.95]
    for step in (0, 7):
        batch = sample_tokens(logits, temps, tops, uniforms(range(8), step), top_k=64)
        alone = [
            int(
                sample_tokens(
                    logits[i : i + 1],
                    temps[i : i + 1],
                    tops[i : i + 1],
                    uniforms([i], step),
                    top_k=64,
                )
            )
            for i in range(8)
        ]
        assert batch.tolist() == alone
        assert alone[3] == int(logits[3].argmax())  # temperature 0 in a sampled batch: greedy
        # the batch's order does not matter either
        flip = sample_tokens(
            logits.flip(0), temps[::-1], tops[::-1], uniforms(range(8), step).flip(0), top_k=64
        )
        assert flip.tolist() == alone[::-1]


def test_sampling_is_seeded_and_replays():
    torch.manual_seed(1)
    logits = torch.randn(1, 5000).repeat(8, 1)  # one distribution, eight requests
    temps, tops = [1.0] * 8, [0.95] * 8
    once = [
        sample_tokens(logits, temps, tops, uniforms(range(8), step)).tolist() for step in range(6)
    ]
    again = [
        sample_tokens(logits, temps, tops, uniforms(range(8), step)).tolist() for step in range(6)
    ]
    assert once == again  # same seeds, same tokens
    per_seed = {tuple(step[r] for step in once) for r in range(8)}
    assert len(per_seed) == 8  # different seeds, different tokens
    keys = torch.tensor([sample_seed(s, j) for s in range(50) for j in range(4)])
    u = torch.stack([row_uniforms(keys, step) for step in range(50)])
    assert u.min() >= 0 and u.max() < 1 and u.mean().item() == pytest.approx(0.5, abs=0.01)
    assert u.unique().numel() > 0.99 * u.numel()  # by key, sample and step
    assert torch.equal(row_uniforms(keys[[5, 0, 9]], 3), u[3, [5, 0, 9]])  # a row's own number


def test_the_hash_multiplies_modulo_two_to_the_32_without_overflow():
    from stackelberg.llm.local.sampling import _mul32

    x = torch.tensor([0, 1, 0xFFFF, 0x10000, 0xDEADBEEF, 0xFFFFFFFF])
    for c in (0x7FEB352D, 0x846CA68B):
        assert _mul32(x, c).tolist() == [(v * c) & 0xFFFFFFFF for v in x.tolist()]


def test_top_p_keeps_only_the_nucleus_and_temperature_zero_is_greedy():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]])).repeat(400, 1)
    picks = sample_tokens(logits, [1.0] * 400, [0.7] * 400, uniforms(range(400)))
    assert set(picks.tolist()) == {0, 1}  # 0.5 + 0.3 covers 0.7; tokens 2 and 3 are cut
    share = (picks == 0).float().mean().item()
    assert share == pytest.approx(0.5 / 0.8, abs=0.08)  # renormalized over the nucleus
    assert sample_tokens(logits[:1], [0.0], [0.9], uniforms([0])).tolist() == [0]
    # top_p 1 keeps every token, on the sorted (top-k) and the unsorted path alike
    for top_k in (256, 2):
        whole = sample_tokens(logits, [1.0] * 400, [1.0] * 400, uniforms(range(400)), top_k=top_k)
        assert set(whole.tolist()) == {0, 1, 2, 3}


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


def test_equal_logits_are_ranked_by_token_index():
    """Ties (common with a bfloat16 head) rank by token index, whatever order topk gives
    them: the nucleus of 0.5 over three equal tokens is the first two of them."""
    logits = torch.tensor([[0.0, 5.0, 5.0, 5.0]])
    low, high = (sample_tokens(logits, [1.0], [0.5], [u]).item() for u in (0.0, 0.99))
    assert (low, high) == (1, 2)


def test_each_step_draws_its_own_number():
    keys = torch.tensor([sample_seed(7, 0), sample_seed(7, 1)])
    assert not torch.equal(row_uniforms(keys, 0), row_uniforms(keys, 1))
