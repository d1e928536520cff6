"""Loading a float32 checkpoint at half precision reads a half-size copy kept in the cache."""

from __future__ import annotations

import json

import pytest
import torch
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import WhitespaceSplit
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from stackelberg.llm.local import loading


def _checkpoint(folder, seed: int) -> None:
    """A two-layer float32 Llama with a word-level tokenizer: a checkpoint in milliseconds."""
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=16, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
    )  # fmt: skip
    LlamaForCausalLM(config).to(torch.float32).save_pretrained(folder)
    vocab = {f"w{i}": i for i in range(16)}
    words = Tokenizer(WordLevel(vocab, unk_token="w0"))
    words.pre_tokenizer = WhitespaceSplit()
    tok = PreTrainedTokenizerFast(tokenizer_object=words)
    tok.save_pretrained(folder)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("STACKELBERG_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _weights(lm) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in lm.state_dict().items()}


def test_a_bfloat16_load_keeps_a_copy_and_reads_it_the_next_time(tmp_path, cache, monkeypatch):
    source = tmp_path / "ckpt"
    _checkpoint(source, seed=0)
    cpu = torch.device("cpu")
    _, first = loading.load_model(str(source), "ckpt", "bfloat16", cpu, None)
    copy = loading.converted_dir(str(source), "bfloat16")
    assert str(copy).startswith(str(cache))
    assert json.loads((copy / "config.json").read_text())["dtype"] == "bfloat16"
    size = lambda folder: sum(f.stat().st_size for f in folder.glob("*.safetensors"))  # noqa: E731
    assert size(copy) < 0.6 * size(source)

    reads = []
    real = loading.AutoModelForCausalLM.from_pretrained
    monkeypatch.setattr(
        loading.AutoModelForCausalLM,
        "from_pretrained",
        lambda folder, **kw: reads.append(str(folder)) or real(folder, **kw),
    )
    _, second = loading.load_model(str(source), "ckpt", "bfloat16", cpu, None)
    assert reads == [str(copy)]
    one, two = _weights(first), _weights(second)
    assert all(v.dtype == torch.bfloat16 for v in two.values())
    assert all(torch.equal(one[k], two[k]) for k in one)
    # the copy holds the float32 weights rounded to bfloat16, nothing else
    direct = real(str(source), dtype=torch.float32)
    assert all(torch.equal(v.to(torch.bfloat16), two[k]) for k, v in _weights(direct).items())


def test_a_new_checkpoint_in_the_same_folder_replaces_the_copy(tmp_path, cache):
    source = tmp_path / "ckpt"
    cpu = torch.device("cpu")
    _checkpoint(source, seed=0)
    _, old = loading.load_model(str(source), "ckpt", "bfloat16", cpu, None)
    _checkpoint(source, seed=1)
    _, new = loading.load_model(str(source), "ckpt", "bfloat16", cpu, None)
    key = "model.layers.0.mlp.up_proj.weight"
    assert not torch.equal(_weights(old)[key], _weights(new)[key])
    _, again = loading.load_model(str(source), "ckpt", "bfloat16", cpu, None)
    assert torch.equal(_weights(new)[key], _weights(again)[key])
    assert [p.name for p in (cache / "converted").iterdir()] == [
        loading.converted_dir(str(source), "bfloat16").name
    ]


def test_float32_and_int8_loads_read_the_checkpoint_itself(tmp_path, cache):
    source = tmp_path / "ckpt"
    _checkpoint(source, seed=0)
    for dtype in ("float32", "int8"):
        loading.load_model(str(source), "ckpt", dtype, torch.device("cpu"), None)
    assert not (cache / "converted").exists()


def test_an_unwritable_cache_only_costs_the_copy(tmp_path, monkeypatch, caplog):
    source = tmp_path / "ckpt"
    _checkpoint(source, seed=0)
    blocker = tmp_path / "file"
    blocker.write_text("")  # a cache root that is a file: no folder can be made in it
    monkeypatch.setenv("STACKELBERG_CACHE_DIR", str(blocker))
    _, lm = loading.load_model(str(source), "ckpt", "bfloat16", torch.device("cpu"), None)
    assert next(lm.parameters()).dtype == torch.bfloat16
    assert "no bfloat16 copy" in caplog.text


def test_a_copy_with_an_unreadable_record_is_written_again(tmp_path, cache):
    source = tmp_path / "ckpt"
    _checkpoint(source, seed=0)
    cpu = torch.device("cpu")
    _, first = loading.load_model(str(source), "ckpt", "bfloat16", cpu, None)
    record = loading.converted_dir(str(source), "bfloat16") / "source.json"
    record.write_text("{not json")
    _, again = loading.load_model(str(source), "ckpt", "bfloat16", cpu, None)
    assert json.loads(record.read_text()) == loading._fingerprint(str(source))
    key = "model.layers.0.mlp.up_proj.weight"
    assert torch.equal(_weights(first)[key], _weights(again)[key])


def test_the_response_cache_names_a_checkpoint_by_its_weights_not_its_path(tmp_path, cache):
    from stackelberg.llm import ResponseCache
    from stackelberg.llm.local.backend import LocalBackend

    source, store = tmp_path / "ckpt", ResponseCache(tmp_path / "responses.sqlite")

    def scores() -> list[list[float]]:
        llm = LocalBackend(model=str(source), dtype="float32", cache=store, threads=1)
        return llm.score("w1 w2", [" w3", " w4 w5"])

    _checkpoint(source, seed=0)
    first = scores()
    kept = len(store)
    assert scores() == first and len(store) == kept  # the same weights: served
    _checkpoint(source, seed=0)  # written again: new modification times, the same weights
    assert scores() == first and len(store) == kept
    _checkpoint(source, seed=1)  # other weights under the same path: a miss, new answers
    changed = scores()
    assert len(store) == 2 * kept and changed != first
