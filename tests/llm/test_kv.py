"""The local backend's KV caches: in-place growth, the prefix block store, and prefill with
stored prefixes against a plain forward pass."""

from __future__ import annotations

import pytest
import torch

from stackelberg.llm.local import PrefixBudget, PrefixStore, block_hashes, pad_groups
from stackelberg.llm.local.hf_internals import GrowingLayer


def kv(batch: int, n: int, fill: float) -> torch.Tensor:
    return torch.full((batch, 2, n, 4), fill)


def test_growing_layer_appends_in_place_and_matches_concatenation():
    layer = GrowingLayer(spare=8)
    parts = [kv(2, 3, 1.0), kv(2, 1, 2.0), kv(2, 1, 3.0)]
    keys, _ = layer.update(parts[0], parts[0] * 10)
    storage = layer.keys.untyped_storage().data_ptr()
    for p in parts[1:]:
        keys, values = layer.update(p, p * 10)
    assert layer.keys.untyped_storage().data_ptr() == storage  # no reallocation
    assert torch.equal(keys, torch.cat(parts, dim=2))
    assert torch.equal(values, torch.cat(parts, dim=2) * 10)
    assert layer.get_seq_length() == 5


def test_growing_layer_cut_back_then_append_overwrites_and_selects_rows():
    layer = GrowingLayer(spare=4)
    layer.update(kv(3, 4, 1.0), kv(3, 4, 1.0))
    layer.keys, layer.values = (
        layer.keys[:, :, :2],
        layer.values[:, :, :2],
    )  # as a tree forward does
    keys, _ = layer.update(kv(3, 1, 5.0), kv(3, 1, 5.0))
    assert keys.shape[2] == 3 and keys[0, 0, 2, 0] == 5.0
    rows = torch.tensor([2, 0, 0])
    before = layer.keys[rows].clone()
    layer.batch_select_indices(rows)
    assert torch.equal(layer.keys, before)
    keys, _ = layer.update(kv(3, 1, 7.0), kv(3, 1, 7.0))
    assert keys.shape == (3, 2, 4, 4) and torch.all(keys[:, :, 3] == 7.0)


def test_dropping_rows_moves_the_kept_ones_down_in_place_then_appends():
    layer = GrowingLayer(spare=4)
    start = torch.arange(5.0).view(5, 1, 1, 1).expand(5, 2, 3, 4).contiguous()
    layer.update(start, start * 10)
    storage = layer.keys.untyped_storage().data_ptr()
    keep = torch.tensor([1, 3, 4])
    expected_keys, expected_values = layer.keys[keep].clone(), layer.values[keep].clone()
    layer.batch_select_indices(keep)
    assert layer.keys.untyped_storage().data_ptr() == storage  # no new buffer
    assert torch.equal(layer.keys, expected_keys) and torch.equal(layer.values, expected_values)
    keys, values = layer.update(kv(3, 1, 9.0), kv(3, 1, 8.0))
    assert torch.equal(keys[:, :, :3], expected_keys) and torch.all(keys[:, :, 3] == 9.0)
    assert torch.equal(values[:, :, :3], expected_values) and torch.all(values[:, :, 3] == 8.0)


def test_growing_layer_adopts_an_empty_buffer_and_writes_into_it():
    buf = torch.zeros(2, 1, 2, 6, 4)
    layer = GrowingLayer()
    layer.adopt(buf[0], buf[1], 0)
    layer.update(kv(1, 6, 3.0)[:, :1], kv(1, 6, 4.0)[:, :1])
    assert torch.all(buf[0, :, :, :6] == 3.0) and torch.all(buf[1] == 4.0)


def test_block_hashes_name_whole_prefixes():
    a = block_hashes(list(range(100)), block=32)
    b = block_hashes(list(range(64)) + [7] * 40, block=32)
    assert len(a) == 3 and len(b) == 3  # full blocks only
    assert a[:2] == b[:2] and a[2] != b[2]
    shifted = block_hashes([1] + list(range(99)), block=32)
    assert not set(shifted) & set(a)  # a block's key depends on everything before it


def test_prefix_store_evicts_least_recently_used_chain_ends_first():
    block = torch.zeros(10)  # 40 bytes
    store = PrefixStore(max_bytes=120, block=32)
    chain = [b"a", b"b", b"c"]
    for key in chain:
        store.put(key, block.clone())
    assert store.cached(chain) == 3 and store.bytes == 120
    store.put(b"x", block.clone())  # evicts the chain's end, never its start
    assert store.cached(chain) == 2 and store.cached([b"x"]) == 1
    store.put(b"huge", torch.zeros(100))  # bigger than the whole store: not kept
    assert store.cached([b"huge"]) == 0 and store.bytes <= 120
    off = PrefixStore(max_bytes=0)
    off.put(b"a", block)
    assert len(off) == 0


def test_stores_on_one_budget_evict_each_others_least_recently_used_blocks():
    block = torch.zeros(10)  # 40 bytes
    budget = PrefixBudget(max_bytes=120)
    labeler, player = PrefixStore(budget=budget), PrefixStore(budget=budget)
    labeler.put(b"a", block.clone())
    labeler.put(b"b", block.clone())
    player.put(b"a", block.clone())  # the same key in another model's store is its own block
    assert budget.bytes == 120 and labeler.cached([b"a"]) == 1  # "a" of the labeler: just used
    player.put(b"c", block.clone())  # the oldest block of any store goes: the labeler's "b"
    assert labeler.cached([b"b"]) == 0 and labeler.cached([b"a"]) == 1
    assert player.cached([b"a", b"c"]) == 2 and budget.bytes == 120
    labeler.clear()  # a store's blocks leave the budget with it
    assert budget.bytes == 80 == player.bytes and len(labeler) == 0


def test_a_store_on_its_own_budget_neither_evicts_nor_is_evicted_by_the_shared_ones():
    block = torch.zeros(10)  # 40 bytes
    budget = PrefixBudget(max_bytes=80)
    measurer, player = PrefixStore(budget=budget), PrefixStore(budget=budget)
    measurer.put(b"old", block.clone())
    with measurer.own_budget():
        assert len(measurer) == 0 and budget.bytes == 0  # emptied: its blocks left the budget
        measurer.put(b"m1", block.clone())
        measurer.put(b"m2", block.clone())
        player.put(b"p1", block.clone())
        player.put(b"p2", block.clone())
        # each side fills a budget of the shared one's size; none of its blocks went
        assert measurer.cached([b"m1", b"m2"]) == 2 and player.cached([b"p1", b"p2"]) == 2
        assert budget.bytes == 80 == player.bytes and measurer.budget is not budget
        assert measurer.budget.max_bytes == budget.max_bytes
    assert measurer.budget is budget and len(measurer) == 0  # emptied again, back on the shared
    assert budget.bytes == 80 and player.cached([b"p1", b"p2"]) == 2


def test_pad_groups_cut_where_padding_would_exceed_the_slack():
    assert pad_groups([]) == []
    assert pad_groups([10, 10, 11, 12]) == [(0, 4)]  # 48 padded for 43 real
    assert pad_groups([5, 6, 40, 41, 200]) == [(0, 2), (2, 4), (4, 5)]
    for lengths in ([1, 2, 3, 50, 51, 52, 400], [7] * 9, [3, 90]):
        groups = pad_groups(lengths, slack=1.25)
        assert groups[0][0] == 0 and groups[-1][1] == len(lengths)
        assert all(a < b for a, b in groups) and all(
            groups[k][1] == groups[k + 1][0] for k in range(len(groups) - 1)
        )
        for a, b in groups:
            assert (b - a) * lengths[b - 1] <= 1.25 * sum(lengths[a:b]) or b - a == 1


# ---- on the real model ------------------------------------------------------------------------


def _plain_last_states(llm, rows):
    return torch.stack([llm.net.forward(torch.tensor([ids]), None)[0][0, -1] for ids in rows])


@pytest.mark.slow
@pytest.mark.parametrize("warm", [False, True])
def test_prefill_with_stored_prefixes_matches_plain_forwards(local_llm, warm):
    base = local_llm.encode("The rules: werewolves hunt at night, the village votes by day. " * 6)
    rows = [base + local_llm.encode(f" Player {i} speaks now.", first=False) for i in range(3)]
    rows.append(local_llm.encode("A short unrelated prompt."))
    rows.append(base[:70])
    store = local_llm.prefix_store
    store.clear()
    try:
        with torch.inference_mode():
            if warm:  # blocks stored by an earlier call
                local_llm.prefiller.prefill([base[:100]])
            last, cache, mask, order = local_llm.prefiller.prefill(rows, spare=4)
            plain = _plain_last_states(local_llm, [rows[i] for i in order])
        assert sorted(order) == list(range(len(rows)))
        assert not torch.isnan(last).any()
        assert (last - plain).abs().max().item() <= 1e-3
        assert store.hits > 0 and len(store) >= len(base) // store.block
        assert mask.sum(-1).tolist() == [len(rows[i]) for i in order]
        for layer in cache.layers:
            assert not torch.isnan(layer.keys.transpose(1, 2)[mask.bool()]).any()
    finally:
        store.clear()


@pytest.mark.slow
def test_generation_and_scores_with_a_warm_store_equal_a_cold_one(local_llm):
    prompt = [
        {"role": "system", "content": "You play Werewolf. The wolves hunt at night. " * 8},
        {"role": "user", "content": "Who do you suspect? Answer in one sentence."},
    ]
    kw = {"max_new_tokens": 10, "temperature": 0}
    store = local_llm.prefix_store
    store.clear()
    try:
        cold = local_llm.generate([prompt], **kw)
        cold_scores = local_llm.score(prompt, ["Player 2", "Player 3"])
        hits = store.hits
        warm = local_llm.generate([prompt], **kw)
        warm_scores = local_llm.score(prompt, ["Player 2", "Player 3"])
        assert store.hits > hits  # the second round reused the first round's blocks
        assert warm == cold
        flat = [
            x - y
            for a, b in zip(cold_scores, warm_scores, strict=True)
            for x, y in zip(a, b, strict=True)
        ]
        assert max(map(abs, flat)) <= 1e-4
    finally:
        store.clear()
