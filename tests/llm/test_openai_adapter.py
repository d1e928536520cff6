"""A LoRA adapter served beside its base model (vLLM's --lora-modules), on the openai backend."""

from __future__ import annotations

import pytest

from stackelberg.llm import ConfigError, GenerateRequest, LLMConfig, make_llm
from stackelberg.llm.config import served_adapter_name

from .fake_server import CONTEXT, MODEL, FakeServer


@pytest.fixture
def server():
    with FakeServer() as s:
        s.adapters = {"refiner-werewolf": MODEL}
        yield s


def served(server: FakeServer, **kw):
    return make_llm(
        backend="openai", model=MODEL, base_url=server.url + "/v1", cache="off", max_retries=0, **kw
    )


def test_an_adapter_samples_n_completions_in_one_request_named_by_the_adapter(server):
    llm = served(server, adapter="refiner-werewolf")
    chat = [{"role": "user", "content": "rewrite this"}]
    request = GenerateRequest(
        chat, n=3, seed=7, temperature=0.5, top_p=0.8, max_new_tokens=12, stop=("\n\n",)
    )
    (out,) = llm.run_batch([request])
    assert out == [f"echo:rewrite this|seed=7|i={i}|t=0.5" for i in range(3)]
    ((path, body),) = server.requests
    assert path == "/v1/chat/completions"
    assert body["model"] == "refiner-werewolf" and body["n"] == 3 and body["seed"] == 7
    assert (body["top_p"], body["max_tokens"], body["stop"]) == (0.8, 12, ["\n\n"])
    assert llm.context_window == CONTEXT  # its parent's: vLLM lists adapters without one


def test_the_base_model_and_its_adapter_share_one_server(server):
    base, tuned = served(server), served(server, adapter="refiner-werewolf")
    base.generate(["a"], seed=1), tuned.generate(["a"], seed=1)
    assert [b["model"] for _, b in server.requests] == [MODEL, "refiner-werewolf"]


def test_an_adapter_the_server_does_not_list_is_one_line_naming_what_it_lists(server):
    with pytest.raises(ConfigError) as err:
        served(server, adapter="refiner-avalon")
    assert str(err.value) == (
        f"openai backend: the server at {server.url}/v1 serves no adapter 'refiner-avalon' "
        f"(its /v1/models lists {MODEL}, refiner-werewolf); start it with --enable-lora "
        "--lora-modules refiner-avalon=FOLDER"
    )
    assert not server.requests  # refused before any request


@pytest.mark.parametrize("adapter", ["models/refiner/werewolf", "./refiner", "~/lora", "a\\b"])
def test_a_folder_as_an_openai_adapter_is_refused_in_one_line(adapter):
    with pytest.raises(ConfigError, match=r"^invalid llm config: .*not a folder") as err:
        make_llm(backend="openai", model="m", adapter=adapter)
    assert "\n" not in str(err.value)


def test_anthropic_serves_no_adapters():
    with pytest.raises(ConfigError, match="the anthropic backend serves no LoRA adapters"):
        make_llm(backend="anthropic", model="claude", adapter="refiner")


def test_a_trained_folder_is_served_under_its_path_below_models(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert served_adapter_name("models/refiner/werewolf") == "refiner-werewolf"
    assert served_adapter_name(tmp_path / "models/refiner/joint") == "refiner-joint"
    assert served_adapter_name("models/refiner/onuw/extra/pos_only") == (
        "refiner-onuw-extra-pos_only"
    )
    assert served_adapter_name("models/warm_start/avalon") == "warm_start-avalon"
    with pytest.raises(ConfigError, match="is outside it$"):
        served_adapter_name(tmp_path.parent / "elsewhere")


def test_with_adapter_keeps_the_local_folder_and_names_the_served_module(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    local = LLMConfig(model="models/base").with_adapter("models/refiner/werewolf")
    assert (local.adapter, local.cache) == ("models/refiner/werewolf", "default")
    remote = LLMConfig(backend="openai", model="Qwen/Qwen2.5-7B-Instruct")
    trained = remote.with_adapter("models/refiner/werewolf")
    # a retrained folder keeps its name: its answers are not cached under it
    assert (trained.adapter, trained.cache, trained.model) == (
        "refiner-werewolf",
        "off",
        "Qwen/Qwen2.5-7B-Instruct",
    )
