"""The decode loop on a tiny random Llama (built here, no download): each row's tokens are its
own request's whatever its batchmates, and a step sends the host the chosen tokens only."""

from __future__ import annotations

import types

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from stackelberg.llm.base import SamplingParams
from stackelberg.llm.local.decode import generate_tokens
from stackelberg.llm.local.model import LocalModel
from stackelberg.llm.local.prefill import Prefiller, PrefixStore

VOCAB = 1000  # far above the batch's 8 rows: a transfer's size tells logits from tokens


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
        eos_token_id=1, pad_token_id=0, bos_token_id=2,
    )  # fmt: skip
    lm = LlamaForCausalLM(config).eval()
    net = LocalModel(types.SimpleNamespace(eos_token_id=1, pad_token_id=0), lm, torch.device("cpu"))
    return Prefiller(net, PrefixStore(max_bytes=0))


PROMPTS = [[2, 17, 300, 41, 9], [2, 5, 6], [2, 800, 801, 802, 803, 804, 805], [2, 99]]
#: the request under test, then its batchmates: a greedy one, one at top_p 1, short ones
PARAMS = [
    SamplingParams(temperature=0.9, top_p=0.9, max_new_tokens=12),
    SamplingParams(temperature=0.0, top_p=0.9, max_new_tokens=3),
    SamplingParams(temperature=1.0, top_p=1.0, max_new_tokens=2),
    SamplingParams(temperature=0.7, top_p=0.8, max_new_tokens=12),
]


def run(prefiller, which, seeds, logprobs=False):
    """Each sample's tokens (and log-probabilities) of the requests ``which``, 2 samples each."""
    with torch.inference_mode():
        out = dict(
            generate_tokens(
                prefiller,
                [PROMPTS[i] for i in which],
                [2] * len(which),
                seeds,
                [PARAMS[i] for i in which],
                batch_size=64,
                logprobs=logprobs,
            )
        )
    return [[(s.tokens, s.end, s.logprobs) for s in out[k]] for k in range(len(which))]


def test_a_requests_tokens_are_its_own_alone_or_in_a_batch_of_8(tiny):
    alone = run(tiny, [0], [11])[0]
    batch = run(tiny, [0, 1, 2, 3], [11, 5, 6, 7])  # 8 rows; the short ones are dropped
    assert batch[0] == alone
    assert run(tiny, [3, 2, 0], [7, 6, 11])[2] == alone  # another order, other batchmates
    assert run(tiny, [0], [11])[0] == alone  # replays
    assert run(tiny, [0], [12])[0] != alone  # another seed, other tokens
    assert alone[0][0] != alone[1][0]  # the request's two samples differ


def test_logprobs_are_those_of_the_tempered_distribution(tiny):
    """Each token's log-probability under the row's temperature (the logits as a plain
    forward of the prompt and the tokens before it gives them)."""
    net = tiny.model
    out = run(tiny, [0, 1], [3, 4], logprobs=True)  # a sampled request and a greedy one
    for i in (0, 1):
        for tokens, end, lps in out[i]:
            seq = tokens + ([end] if end is not None else [])
            t = PARAMS[i].temperature or 1.0
            with torch.inference_mode():
                hidden, _ = net.forward(torch.tensor([PROMPTS[i] + seq]), None)
                logits = net.head(hidden[0, len(PROMPTS[i]) - 1 : -1]).float() / t
            want = torch.log_softmax(logits, -1).gather(-1, torch.tensor(seq)[:, None])
            assert lps == pytest.approx(want.squeeze(-1).tolist(), abs=1e-4)


def test_a_decode_step_sends_the_host_tokens_not_logits(tiny, monkeypatch):
    """Whatever leaves a tensor for Python during decoding (``tolist``, ``item``, ``cpu``,
    ``int()``...) holds at most one number per row, and no row of logits is moved."""
    sizes: list[int] = []
    decoding = False
    net = tiny.model
    head = net.head

    def watched_head(hidden):
        nonlocal decoding
        decoding = True  # prefill does not use the head: from here on, decode steps
        return head(hidden)

    def record(name):
        real = getattr(torch.Tensor, name)

        def wrapper(self, *args, **kwargs):
            # on a CPU every .to() looks alike: only a vocabulary-wide one counts as a move
            if decoding and (name != "to" or self.numel() >= VOCAB):
                sizes.append(self.numel())
            return real(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, wrapper)

    monkeypatch.setattr(net, "head", watched_head)
    for name in ("tolist", "item", "cpu", "numpy", "to", "__int__", "__float__", "__bool__"):
        record(name)
    rows = run(tiny, [0, 1, 2, 3], [11, 5, 6, 7], logprobs=True)
    monkeypatch.undo()
    assert sum(len(r) for r in rows) == 8
    assert sizes and max(sizes) <= 8 < VOCAB
    assert sizes.count(8) >= 2  # the first step's tokens and log-probabilities, all 8 rows


def test_a_sampled_answer_is_cached_under_its_random_stream(tmp_path, monkeypatch):
    """An answer sampled from an earlier stream is not served as this one's; a greedy one
    (no random numbers) is."""
    from stackelberg.llm import ResponseCache
    from stackelberg.llm.local import LocalBackend

    from .test_threads import _checkpoint

    monkeypatch.setenv("STACKELBERG_CACHE_DIR", str(tmp_path / "cache"))
    _checkpoint(tmp_path / "ckpt")
    cache = ResponseCache(tmp_path / "responses.sqlite")
    llm = LocalBackend(str(tmp_path / "ckpt"), device="cpu", cache=cache, threads=1)
    calls = []
    real = llm._generate
    monkeypatch.setattr(llm, "_generate", lambda *a: calls.append(a) or real(*a))

    def ask(temperature):
        return llm.generate(["w1 w2"], temperature=temperature, max_new_tokens=3, seed=1)

    sampled, greedy = ask(0.9), ask(0.0)
    assert (ask(0.9), ask(0.0), len(calls)) == (sampled, greedy, 2)  # the second time cached
    monkeypatch.setattr(llm, "sampler", "an earlier stream")
    ask(0.9), ask(0.0)
    assert len(calls) == 3  # the sampled answer drawn anew, the greedy one still cached
    llm.close()
