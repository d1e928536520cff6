"""The local backend on the real embedded model (loaded once per session)."""

from __future__ import annotations

import io
import os

import pytest
import torch

from stackelberg.llm import ContextLengthError, GenerateRequest, ResponseCache, ScoreRequest

from .scores import max_diff

pytestmark = pytest.mark.slow

CTX = "Day 2 in the village. Alice: I saw Bob near the well at night. Bob: I was asleep. "
CHAT = [{"role": "user", "content": "Who is the werewolf, Alice or Bob? Answer with one name."}]


def test_nested_scores_match_a_full_forward(local_llm):
    cands = [" I trust Alice.", " Bob is lying, vote him out now", ""]
    resps = [" I agree.", " No. Carol is the wolf and I can prove it.", ""]
    fast = local_llm.score_nested(CTX, cands, resps, joiner="\nCarol:")
    naive = local_llm.score_nested_naive(CTX, cands, resps, joiner="\nCarol:")
    assert [len(s) for s in fast[1]] == [len(local_llm.encode(r, first=False)) for r in resps]
    assert fast[0][2] == [] and all(x < 0 for x in fast[1][1])
    assert max_diff(fast, naive) <= 1e-4


def test_score_with_chat_prefix_matches_a_full_forward(local_llm):
    fast = local_llm.score(CHAT, ["Alice", "Bob", "Bob."])
    naive = local_llm.score_nested_naive(CHAT, [""], ["Alice", "Bob", "Bob."])[0]
    assert max_diff([fast], [naive]) <= 1e-4
    assert fast[1] == pytest.approx(fast[2][: len(fast[1])], abs=1e-4)  # same prefix tokens


def test_many_prefixes_scored_together_match_full_forwards(local_llm):
    long = CTX * 4 + "Who is lying?"
    prefixes = [CHAT, CTX, long, CTX + "Carol: I think"]
    conts = [["Alice", "Bob", ""], [" yes"], [" Bob", " Alice is the wolf, I saw her"], [" no"]]
    store = local_llm.prefix_store
    store.clear()
    try:
        for _ in ("cold", "warm"):  # the second round reads the blocks the first one stored
            fast = local_llm._score_many(prefixes, conts)
            naive = [
                local_llm.score_nested_naive(p, [""], cs)[0]
                for p, cs in zip(prefixes, conts, strict=True)
            ]
            assert fast[0][2] == [] and [len(x) for x in fast[2]] == [len(x) for x in naive[2]]
            assert max_diff(fast, naive) <= 1e-4
        assert store.hits > 0
    finally:
        store.clear()


#: (context, candidates, responses, joiner): boundaries after a space, inside a word, and
#: before whitespace-led and whitespace-only responses
BOUNDARIES = [
    ("Carol says: ", ["I am the Seer.", "Play", ""], [" I agree.", "ers", " ", "\n"], "\nBob:"),
    ("Day 2. Play", ["er 3 is lying", "ers, listen"], ["ers", " wolf"], " said"),
    ("Alice: I tru", ["st Bob"], ["st", "!", " "], ". Carol: "),
]


@pytest.mark.parametrize(("context", "candidates", "responses", "joiner"), BOUNDARIES)
def test_scores_are_those_of_the_whole_text_at_every_boundary(
    local_llm, context, candidates, responses, joiner
):
    fast = local_llm.score_nested(context, candidates, responses, joiner)
    naive = local_llm.score_nested_naive(context, candidates, responses, joiner)
    assert max_diff(fast, naive) <= 1e-4  # zip(strict) also checks the token counts


def test_a_chat_followers_reply_is_scored_on_its_own_tokens(local_llm):
    """The Measurer's shape: the candidate inside a rendered chat, the response after the
    opened assistant turn; a response's tokens are those it holds in the whole text."""
    text = local_llm.render_chat([{"role": "user", "content": "Carol says: @@"}])
    context, joiner = text.split("@@")
    fast = local_llm.score_nested(context, ["I am the Seer."], ["I agree.", " No."], joiner)
    whole = context + "I am the Seer." + joiner + "I agree."
    tail = local_llm.encode(whole)[-len(fast[0][0]) :]
    assert local_llm.tokenizer.decode(tail) == "I agree."
    assert (
        max_diff(
            fast,
            local_llm.score_nested_naive(context, ["I am the Seer."], ["I agree.", " No."], joiner),
        )
        <= 1e-4
    )


def test_generation_is_deterministic_and_independent_of_the_batch(local_llm):
    kw = {"max_new_tokens": 8, "temperature": 0.8}
    alone = local_llm.generate([CHAT], n=2, seed=11, **kw)[0]
    mixed = local_llm.generate(["The night falls and", CHAT, "Vote: "], n=2, seed=[1, 11, 2], **kw)
    assert mixed[1] == alone
    assert local_llm.generate([CHAT], n=1, seed=11, **kw)[0] == alone[:1]
    other = local_llm.generate([CHAT], n=2, seed=12, **kw)[0]
    assert other != alone and alone[0] != alone[1]


def test_requests_with_different_settings_in_one_call_equal_separate_calls(local_llm):
    reqs = [
        GenerateRequest(CHAT, max_new_tokens=3, temperature=0.0, seed=1),
        GenerateRequest(CHAT, n=2, max_new_tokens=9, temperature=0.9, top_p=0.8, seed=2),
        GenerateRequest("1, 2, 3, 4,", max_new_tokens=12, temperature=0.0, stop=(" 7",)),
    ]
    mixed = local_llm.run_batch(reqs)
    alone = [local_llm.run_batch([r])[0] for r in reqs]
    assert mixed == alone
    assert len(local_llm.encode(mixed[0][0], first=False)) <= 3
    assert " 7" not in mixed[2][0] and mixed[2][0].startswith(" 5, 6")


def test_greedy_stop_strings_and_length(local_llm):
    out = local_llm.generate(["1, 2, 3, 4,"], temperature=0, max_new_tokens=10)[0][0]
    assert out.startswith(" 5, 6")
    stopped = local_llm.generate(["1, 2, 3, 4,"], temperature=0, max_new_tokens=10, stop=[" 7"])
    assert stopped[0][0] == out[: out.index(" 7")]
    assert len(local_llm.encode(out, first=False)) <= 10


def test_prompt_longer_than_the_context_is_refused(local_llm, monkeypatch):
    monkeypatch.setattr(local_llm, "_context_window", len(local_llm.encode(CTX)) + 2)
    with pytest.raises(ContextLengthError, match="context window of"):
        local_llm.generate([CTX], max_new_tokens=10)
    with pytest.raises(ContextLengthError):
        local_llm.score(CTX, [" and more words"] * 2)


def test_run_batch_groups_calls_and_serves_the_cache(local_llm, tmp_path, monkeypatch):
    monkeypatch.setattr(local_llm, "cache", ResponseCache(tmp_path / "c.sqlite"))
    calls = []
    real = local_llm._generate

    def spy(prompts, ns, seeds, params):
        calls.append(len(prompts))
        return real(prompts, ns, seeds, params)

    monkeypatch.setattr(local_llm, "_generate", spy)
    scored = []
    real_score = local_llm._score_many

    def score_spy(prefixes, continuations):
        scored.append(list(map(len, continuations)))
        return real_score(prefixes, continuations)

    monkeypatch.setattr(local_llm, "_score_many", score_spy)
    reqs = [
        GenerateRequest("The wolf", max_new_tokens=4, seed=1),
        ScoreRequest(CTX, [" yes", " no"]),
        GenerateRequest(CHAT, n=2, max_new_tokens=4, seed=2),
        GenerateRequest("The wolf", max_new_tokens=5, seed=1),
        ScoreRequest(CTX, [" no"]),
        ScoreRequest(CHAT, ["Alice"]),
    ]
    first = local_llm.run_batch(reqs)
    assert calls == [3]  # different sampling settings still share one batched call
    assert scored == [[2, 1]]  # every prefix in one call, a shared prefix once
    assert len(first[2]) == 2 and first[4] == [first[1][1]]
    assert first[1] == local_llm.score(CTX, [" yes", " no"])
    second = local_llm.run_batch(reqs)
    assert second == first and calls == [3] and len(scored) == 1  # all from the cache
    local_llm.run_batch([ScoreRequest(CTX, [" no", " maybe"])])
    assert scored[-1] == [1]  # only what the cache lacks


def test_render_chat_and_count_tokens(local_llm):
    text = local_llm.render_chat(CHAT)
    assert text.endswith("<|im_start|>assistant\n") and CHAT[0]["content"] in text
    assert local_llm.count_tokens(CHAT) == len(local_llm.encode(text))
    assert local_llm.context_window == 8192


def test_backends_of_the_same_weights_share_one_loaded_copy(local_llm):
    """The Measurer (its own context window) and the labeler run one model in memory."""
    from stackelberg.llm import make_llm

    measurer = make_llm(backend="local", cache="off", context_window=1024)
    assert measurer.lm is local_llm.lm and measurer.prefix_store is local_llm.prefix_store
    assert measurer.context_window == 1024 != local_llm.context_window
    int8 = make_llm(backend="local", cache="off", dtype="int8")
    assert int8.lm is not local_llm.lm  # other weights: their own copy and store
    assert int8.prefix_store is not local_llm.prefix_store
    assert int8.prefix_store.budget is local_llm.prefix_store.budget  # one memory budget


def test_the_gguf_is_parsed_once_within_the_block_and_gguf_is_restored():
    import gguf

    from stackelberg.llm.embedded import gguf_path, parsed_once

    reader, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    with parsed_once():
        assert gguf.GGUFReader(gguf_path()) is gguf.GGUFReader(gguf_path())
        arch = gguf.MODEL_ARCH.LLAMA
        assert gguf.get_tensor_name_map(arch, 30) is gguf.get_tensor_name_map(arch, 30)
    assert (gguf.GGUFReader, gguf.get_tensor_name_map) == (reader, name_map)


def test_bfloat16_scores_stay_close_to_float32(local_llm):
    """A bfloat16 Measurer (``bfloat16_if_native``) moves a response's mean log-probability
    by a few hundredths of a nat here (measured: 0.025 a token on average): its LM head runs
    in float32, so the logits are not rounded to bfloat16's three digits."""
    from stackelberg.llm import make_llm

    bf16 = make_llm(backend="local", model="embedded", cache="off", dtype="bfloat16")
    assert bf16.lm.dtype == torch.bfloat16 and bf16.model != local_llm.model  # own cache key
    ctx = CTX * 4
    cands = [" I trust Alice.", " Bob is lying, vote him out now", ""]
    resps = [" I agree.", " No. Carol is the wolf and I can prove it.", " Who saw what?"]
    full = local_llm.score_nested(ctx, cands, resps, joiner="\nCarol:")
    half = bf16.score_nested(ctx, cands, resps, joiner="\nCarol:")
    diffs = [
        abs(x - y)
        for rf, rh in zip(full, half, strict=True)
        for sf, sh in zip(rf, rh, strict=True)
        for x, y in zip(sf, sh, strict=True)
    ]
    assert sum(diffs) / len(diffs) < 0.06 and max(diffs) < 0.5
    for rf, rh in zip(full, half, strict=True):
        for sf, sh in zip(rf, rh, strict=True):
            assert abs(sum(sf) / len(sf) - sum(sh) / len(sh)) < 0.1


def test_bfloat16_if_native_follows_the_cpu(monkeypatch):
    from stackelberg.llm.local import loading

    cpu, gpu = torch.device("cpu"), torch.device("cuda")
    monkeypatch.setattr(loading, "native_bf16", lambda: True)
    assert loading.weights_dtype("bfloat16_if_native", cpu) == "bfloat16"
    monkeypatch.setattr(loading, "native_bf16", lambda: False)
    assert loading.weights_dtype("bfloat16_if_native", cpu) == "float32"
    assert loading.weights_dtype("bfloat16_if_native", gpu) == "bfloat16"


def test_a_cpu_capped_to_an_isa_without_bfloat16_does_not_count_as_native(monkeypatch):
    from stackelberg.llm.local import loading

    monkeypatch.setattr("builtins.open", lambda *a, **k: io.StringIO("flags : avx2 avx512_bf16\n"))
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    assert loading.native_bf16()
    for cap, native in [("AVX2", False), ("avx512_core", False), ("AVX512_CORE_BF16", True)]:
        monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", cap)
        assert loading.native_bf16() is native, cap


def test_a_cpu_backend_caps_onednn_kernels_unless_the_user_did(monkeypatch):
    from stackelberg.llm import make_llm
    from stackelberg.llm.local import loading

    monkeypatch.delenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", raising=False)
    make_llm(backend="local", model="embedded", cache="off", dtype="int8")
    assert os.environ["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] == loading.ONEDNN_CACHE_CAPACITY
    monkeypatch.setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "1024")
    loading.bound_onednn_cache()
    assert os.environ["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] == "1024"
