"""GRPO on the real embedded SmolLM2-135M checkpoint: 2 prompts x 2 completions x 8 tokens."""

from __future__ import annotations

import json
import math

import pytest
from pydantic import ValidationError

from stackelberg.params import Params
from stackelberg.training import (
    GRPOSettings,
    completion_texts,
    expected_steps,
    train_refiner,
    trl_reward,
)
from stackelberg.training.grpo_outputs import (
    CLIPPED_RATIO,
    PARSE_RATE,
    SETTINGS_FILE,
    train_history_rates,
)
from stackelberg.training.trl_bridge import grpo_config, stop_token_ids

PROMPTS = [
    [
        {"role": "system", "content": "You are Player 3 in Werewolf."},
        {"role": "user", "content": "Rewrite: 'I trust Player 2.'\nResponse: <your speech>"},
    ],
    [
        {"role": "system", "content": "You are Player 5 in Avalon."},
        {"role": "user", "content": "Rewrite: 'Player 1 is Merlin.'\nResponse: <your speech>"},
    ],
]
# float32: the run's numbers are compared exactly (test_bf16_* trains in bfloat16)
TINY = GRPOSettings(num_generations=2, precision="float32")
#: the completion limit of the tiny runs (the pipeline: the Refiner profile's token limit)
LIMIT = 8


def longer_is_better(completions: list[str], instance_id: list[str]) -> list[float]:
    """Deterministic and varied within a group: the number of characters."""
    assert len(instance_id) == len(completions)
    return [float(len(c)) for c in completions]


@pytest.fixture(scope="module")
def embedded_base():
    from stackelberg.llm.embedded import ensure_checkpoint

    return ensure_checkpoint()


@pytest.fixture
def unloadable_base(tmp_path):
    """A folder that passes for a checkpoint (a config.json) but holds no weights: a test of
    what fails before loading, which loads nothing even when the check is missed."""
    base = tmp_path / "base"
    base.mkdir()
    (base / "config.json").write_text("{}")
    return base


@pytest.fixture(scope="module")
def run(embedded_base, tmp_path_factory):
    """One training run shared by the tests that inspect its results."""
    out = tmp_path_factory.mktemp("grpo") / "adapter"
    calls: list[tuple[int, dict]] = []
    result = train_refiner(
        embedded_base,
        PROMPTS,
        {"instance_id": ["w-1", "a-7"]},
        longer_is_better,
        TINY,
        out,
        completion_limit=LIMIT,
        on_step=lambda step, metrics: calls.append((step, metrics)),
    )
    return result, calls


def test_params_grpo_section_is_the_settings_class():
    assert Params().grpo == GRPOSettings()
    assert isinstance(Params(grpo={"loss_type": "dr_grpo"}).grpo, GRPOSettings)
    with pytest.raises(ValidationError, match="loss_type"):
        Params(grpo={"loss_type": "ppo"})
    for name, f in GRPOSettings.model_fields.items():
        assert f.description, f"{name} has no description"


def test_the_config_takes_every_setting_over_trls_defaults(tmp_path):
    """Each setting reaches TRL's config as given, whatever TRL's own default for it."""
    import dataclasses

    from trl import GRPOConfig

    s = GRPOSettings(
        num_generations=3,
        prompts_per_step=5,
        beta=0.01,
        epsilon=0.3,
        learning_rate=2e-5,
        epochs=2.0,
        loss_type="dr_grpo",
        scale_rewards="batch",
        temperature=0.5,
        top_p=0.8,
        seed=7,
        precision="float32",
    )
    cfg = grpo_config(s, tmp_path, cuda=False, completion_limit=20)
    assert (cfg.beta, cfg.epsilon, cfg.loss_type, cfg.scale_rewards) == (
        0.01,
        0.3,
        "dr_grpo",
        "batch",
    )
    assert (cfg.learning_rate, cfg.num_train_epochs, cfg.num_generations) == (2e-5, 2.0, 3)
    assert (cfg.temperature, cfg.top_p, cfg.max_completion_length, cfg.seed) == (0.5, 0.8, 20, 7)
    # one optimizer step is one generation batch: 5 prompts x 3 completions, used once
    assert cfg.per_device_train_batch_size == cfg.generation_batch_size == 15
    assert (cfg.gradient_accumulation_steps, cfg.steps_per_generation) == (1, 1)
    assert cfg.use_cpu and not cfg.bf16 and not cfg.fp16 and not cfg.use_vllm
    # the pipeline logs each step itself and keeps only the adapter
    assert (cfg.logging_steps, cfg.save_strategy, cfg.report_to) == (1, "no", [])
    # the defaults too reach TRL where its own defaults differ (TRL: another algorithm)
    theirs = {f.name: f.default for f in dataclasses.fields(GRPOConfig)}
    ours, differ = GRPOSettings(precision="float32"), 0
    cfg = grpo_config(ours, tmp_path, cuda=False, completion_limit=LIMIT)
    for name in ("beta", "loss_type", "temperature", "top_p"):
        differ += theirs[name] != getattr(ours, name)
        assert getattr(cfg, name) == getattr(ours, name), name
    assert differ  # the check can tell a default left to TRL


def test_micro_batch_trains_one_step_in_passes_over_one_generation_batch(tmp_path):
    s = GRPOSettings(num_generations=4, prompts_per_step=2, micro_batch=2)
    cfg = grpo_config(s, tmp_path, cuda=False, completion_limit=LIMIT)
    assert cfg.generation_batch_size == 8 and cfg.per_device_train_batch_size == 2
    assert cfg.gradient_accumulation_steps == cfg.steps_per_generation == 4
    with pytest.raises(ValidationError, match="micro_batch 3 must divide"):
        GRPOSettings(num_generations=4, micro_batch=3)


def test_reward_adapter_passes_texts_and_columns():
    seen = {}

    def reward(completions, instance_id):
        seen.update(completions=completions, instance_id=instance_id)
        return [1, None]

    f = trl_reward(reward)
    out = f(
        prompts=[PROMPTS[0]] * 2,
        completions=[[{"role": "assistant", "content": "Response: a"}], [{"content": "b"}]],
        completion_ids=[[1], [2]],
        instance_id=["w-1", "w-1"],
        trainer_state=object(),
        log_extra=print,
        log_metric=print,
    )
    assert out == [1.0, None]
    assert seen == {"completions": ["Response: a", "b"], "instance_id": ["w-1", "w-1"]}
    assert f.__name__ == "reward"
    assert completion_texts(["plain"]) == ["plain"]
    with pytest.raises(ValueError, match="returned 1 values for 2 completions"):
        trl_reward(lambda completions: [0.0])(prompts=[[], []], completions=["a", "b"])


@pytest.mark.parametrize(
    "change, error, match",
    [
        ({"prompts": []}, ValueError, "prompts is empty"),
        ({"base_model": "/nonexistent/model"}, FileNotFoundError, "not a checkpoint folder"),
        ({"settings": GRPOSettings(prompts_per_step=3)}, ValueError, "cannot fill one step"),
        ({"settings": GRPOSettings(use_vllm=True)}, ValueError, "use_vllm needs a CUDA GPU"),
        ({"columns": {"instance_id": ["x"]}}, ValueError, "1 values for 2 prompts"),
        ({"columns": {"completions": ["x", "y"]}}, ValueError, "clashes with a name TRL"),
        ({"prompts": ["hello", "there"]}, ValueError, r"prompts\[0\] is not a chat"),
    ],
)
def test_bad_inputs_fail_before_loading(unloadable_base, tmp_path, change, error, match):
    kwargs = {
        "base_model": unloadable_base,
        "prompts": PROMPTS,
        "columns": {"instance_id": ["w-1", "a-7"]},
        "reward_fn": longer_is_better,
        "settings": TINY,
        "output_dir": tmp_path / "adapter",
        "completion_limit": LIMIT,
    } | change
    with pytest.raises(error, match=match):
        train_refiner(**kwargs)
    assert not (tmp_path / "adapter").exists()


def test_bad_settings_and_output_dir(unloadable_base, tmp_path):
    with pytest.raises(ValidationError, match="num_generations\n.*greater than or equal to 2"):
        GRPOSettings(num_generations=1)
    with pytest.raises(ValidationError, match="loss_type\n.*'grpo'"):
        GRPOSettings(loss_type="ppo")
    (tmp_path / "data.csv").write_text("keep me")
    with pytest.raises(ValueError, match="not a PEFT adapter folder"):
        train_refiner(
            unloadable_base, PROMPTS, {}, longer_is_better, TINY, tmp_path, completion_limit=LIMIT
        )
    assert (tmp_path / "data.csv").exists()


@pytest.mark.slow
def test_loss_reward_and_times_logged_every_step(run):
    result, calls = run
    assert result.steps == expected_steps(len(PROMPTS), TINY) == 2
    assert [h["step"] for h in result.history] == [1, 2]
    assert [step for step, _ in calls] == [1, 2]
    assert [m for _, m in calls] == result.history
    for metrics in result.history:
        for key in ("loss", "reward", "reward_std", "kl", "generation_s", "reward_s"):
            assert isinstance(metrics[key], float), key
        assert metrics["generation_s"] > 0 and metrics["reward_s"] > 0
    assert result.generation_s == pytest.approx(sum(h["generation_s"] for h in result.history))
    assert result.reward_s == pytest.approx(sum(h["reward_s"] for h in result.history))
    assert result.generation_s > 0 and result.reward_s > 0


@pytest.mark.slow
def test_lora_trained_and_base_frozen(run, embedded_base):
    import torch
    from transformers import AutoModelForCausalLM

    result, _ = run
    fresh = AutoModelForCausalLM.from_pretrained(embedded_base, dtype=torch.float32).state_dict()
    lora_b = 0
    for name, param in result.model.named_parameters():
        if "lora_" in name:
            assert param.requires_grad, name
            if "lora_B" in name:  # PEFT starts every B at zero: non-zero means trained
                lora_b += 1
                assert param.detach().abs().sum() > 0, name
        else:
            assert not param.requires_grad, name
            key = name.removeprefix("base_model.model.").replace(".base_layer", "")
            assert torch.equal(param.detach(), fresh[key]), name
    assert lora_b == 30 * 7  # every linear layer of the 30 blocks: q k v o gate up down


@pytest.mark.slow
def test_saved_adapter_reproduces_logits(run, embedded_base):
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    result, _ = run
    out = result.adapter_dir
    assert (out / "adapter_config.json").exists() and (out / "adapter_model.safetensors").exists()
    config = json.loads((out / "adapter_config.json").read_text())
    assert (config["r"], config["lora_alpha"]) == (TINY.lora_r, TINY.lora_alpha)
    saved = json.loads((out / SETTINGS_FILE).read_text())
    assert saved["settings"]["num_generations"] == 2 and saved["steps"] == 2
    assert [p.name for p in out.parent.iterdir()] == [out.name]  # no temporary folder left

    base = AutoModelForCausalLM.from_pretrained(embedded_base, dtype=torch.float32)
    loaded = PeftModel.from_pretrained(base, out).eval()
    trained = result.model.eval()
    ids = torch.tensor([[1, 2040, 314, 253, 1345, 30, 198, 15125, 42, 339]])
    with torch.no_grad():
        expected = trained(input_ids=ids).logits
        got = loaded(input_ids=ids).logits
        with loaded.disable_adapter():
            plain = loaded(input_ids=ids).logits
    assert torch.allclose(got, expected, atol=1e-5)
    assert not torch.allclose(plain, expected, atol=1e-6)  # the adapter does change the model


@pytest.mark.slow
def test_bf16_trains_the_lora_in_float32_on_a_frozen_bf16_base(embedded_base, tmp_path):
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    settings = TINY.model_copy(update={"precision": "bfloat16"})
    result = train_refiner(
        embedded_base,
        PROMPTS,
        {"instance_id": ["w-1", "a-7"]},
        longer_is_better,
        settings,
        tmp_path / "adapter",
        completion_limit=LIMIT,
    )
    assert result.steps == 2 and all(math.isfinite(h["loss"]) for h in result.history)
    fresh = AutoModelForCausalLM.from_pretrained(embedded_base, dtype=torch.bfloat16)
    weights = fresh.state_dict()
    for name, param in result.model.named_parameters():
        if "lora_" in name:
            assert param.dtype == torch.float32 and param.requires_grad, name
        else:
            key = name.removeprefix("base_model.model.").replace(".base_layer", "")
            assert param.dtype == torch.bfloat16 and torch.equal(param.detach(), weights[key])
    loaded = PeftModel.from_pretrained(fresh, result.adapter_dir).eval()
    ids = torch.tensor([[1, 2040, 314, 253, 1345, 30, 198, 15125, 42, 339]])
    # the trainer's forward runs under bfloat16 autocast (accelerate's mixed precision)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        expected = result.model.eval()(input_ids=ids).logits.float()
        got = loaded(input_ids=ids).logits.float()
        with loaded.disable_adapter():
            plain = loaded(input_ids=ids).logits.float()
    assert torch.equal(got, expected)  # the saved adapter is the trained one
    assert not torch.allclose(plain, expected, atol=0.1)  # and it changes the model


@pytest.mark.slow
def test_wrong_reward_count_fails_and_leaves_nothing(embedded_base, tmp_path):
    out = tmp_path / "adapter"
    one_short = GRPOSettings(num_generations=2)
    with pytest.raises(ValueError, match="returned 1 values for 2 completions"):
        train_refiner(
            embedded_base,
            PROMPTS[:1],
            {},
            lambda completions: [0.0],
            one_short,
            out,
            completion_limit=2,
        )
    assert list(tmp_path.iterdir()) == []


def test_write_adapter_replaces_a_previous_adapter_and_refuses_other_folders(tmp_path):
    from stackelberg.training.grpo_outputs import write_adapter

    out = tmp_path / "refiner"
    write_adapter({"adapter_config.json": b"{}", "adapter_model.safetensors": b"v1"}, out)
    write_adapter({"adapter_config.json": b"{}", "adapter_model.safetensors": b"v2"}, out)
    assert (out / "adapter_model.safetensors").read_bytes() == b"v2"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["refiner"]  # nothing left beside it
    with pytest.raises(ValueError, match="no adapter_config.json"):
        write_adapter({"adapter_model.safetensors": b"v3"}, out)
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("mine")
    with pytest.raises(ValueError, match="not a PEFT adapter folder"):
        write_adapter({"adapter_config.json": b"{}"}, tmp_path / "notes")


def test_an_adapter_config_is_written_the_same_whatever_order_peft_kept_its_modules(tmp_path):
    from stackelberg.training.grpo_outputs import write_adapter

    orders = [["q_proj", "up_proj", "v_proj"], ["v_proj", "q_proj", "up_proj"]]
    written = []
    for i, modules in enumerate(orders):
        config = json.dumps({"target_modules": modules, "r": 16}).encode()
        files = {"adapter_config.json": config, "extra/neg_only/adapter_config.json": config}
        out = write_adapter(files | {"adapter_model.safetensors": b"w"}, tmp_path / str(i))
        written.append([(out / n).read_bytes() for n in sorted(files)])
    assert written[0] == written[1]
    assert json.loads(written[0][0])["target_modules"] == ["q_proj", "up_proj", "v_proj"]


# ---- the Refiner's stop and output rates in training -----------------------------------------


def test_reward_with_a_log_metric_parameter_gets_trls_logger():
    logged = []

    def reward(completions, instance_id, log_metric):
        log_metric(PARSE_RATE, 0.5)
        return [0.0] * len(completions)

    f = trl_reward(reward)
    f(prompts=[[]], completions=["a"], instance_id=["w-1"], log_metric=lambda *a: logged.append(a))
    assert logged == [(PARSE_RATE, 0.5)]


def test_reward_with_a_step_parameter_gets_the_step_that_trains_on_it():
    from types import SimpleNamespace

    seen = []

    def reward(completions, step):
        seen.append(step)
        return [0.0] * len(completions)

    f = trl_reward(reward)
    f(prompts=[[]], completions=["a"], trainer_state=SimpleNamespace(global_step=4))
    f(prompts=[[]], completions=["a"])  # no trainer state: no step to tell
    assert seen == [5, None]


@pytest.mark.slow
def test_each_optimizer_step_calls_the_reward_once_with_its_number(embedded_base, tmp_path):
    """Two passes per optimizer step (micro_batch 1 of 2 completions) still score one
    generation batch per step, numbered as the step history numbers it."""
    steps = []

    def reward(completions, instance_id, step):
        steps.append(step)
        return [float(len(c)) for c in completions]

    settings = GRPOSettings(num_generations=2, precision="float32", micro_batch=1)
    columns = {"instance_id": ["w-1", "a-7"]}
    result = train_refiner(
        embedded_base, PROMPTS, columns, reward, settings, tmp_path / "a", completion_limit=LIMIT
    )
    assert steps == [h["step"] for h in result.history] == [1, 2]


def test_stop_strings_become_every_token_that_holds_them():
    class Vocab:
        texts = ["Hello", " world", "\n", ".\n\n", " \n", "x"]

        def __len__(self):
            return len(self.texts)

        def batch_decode(self, ids):
            return [self.texts[i] for (i,) in ids]

    assert stop_token_ids(Vocab(), ("\n",)) == [2, 3, 4]
    assert stop_token_ids(Vocab(), ()) == [] == stop_token_ids(Vocab(), ("",))


def test_the_refiner_has_one_token_limit_and_no_stop_on_cpu(tmp_path):
    # GRPO's limit is the Refiner profile's: the grpo section's own key is refused, naming it
    from stackelberg.params import ParamsError
    from stackelberg.params.checks import check_renamed

    with pytest.raises(ParamsError, match="grpo.max_completion_length .*use sample.max_new_tokens"):
        check_renamed({"grpo": {"max_completion_length": 9}})
    assert Params(sample={"max_new_tokens": 45}).refiner_profile("werewolf").token_limit == 45
    s = GRPOSettings(num_generations=2)
    cfg = grpo_config(s, tmp_path, cuda=False, completion_limit=32, stop_ids=[198])
    assert cfg.max_completion_length == 32
    assert cfg.generation_kwargs is None  # transformers: the trainer adds them to its EOS ids


def test_train_history_rates():
    history = [
        {"step": 1, CLIPPED_RATIO: 0.5, PARSE_RATE: 0.25},
        {"step": 2, CLIPPED_RATIO: 0.0, PARSE_RATE: 0.75},
    ]
    assert train_history_rates(history, 4) == {
        "completions": 8,
        "ended_rate": 0.75,
        "parse_rate": 0.5,
    }
    empty = train_history_rates([], 4)
    assert empty["completions"] == 0 and math.isnan(empty["ended_rate"])


@pytest.mark.slow
@pytest.mark.parametrize("generation", ["trl", "local"])
def test_a_stop_ends_completions_like_end_of_sequence(embedded_base, tmp_path, generation):
    """With a space as the stop nearly every token ends a completion: none is clipped at the
    limit, each ends at its first token holding a space, and the reward's metric is logged;
    whether TRL samples or the project's decoder does (``generation``)."""

    def reward(completions, instance_id, log_metric):
        log_metric(PARSE_RATE, 1.0)
        return [float(len(c)) for c in completions]

    settings = GRPOSettings(num_generations=2, generation=generation)
    result = train_refiner(
        embedded_base,
        PROMPTS,
        {"instance_id": ["w-1", "a-7"]},
        reward,
        settings,
        tmp_path / "a",
        completion_limit=16,
        stop=(" ",),
    )
    assert [h[CLIPPED_RATIO] for h in result.history] == [0.0, 0.0]
    assert all(h["completions/max_length"] < 16 for h in result.history)
    assert train_history_rates(result.history, settings.completions_per_step) == {
        "completions": 4,
        "ended_rate": 1.0,
        "parse_rate": 1.0,
    }


def test_a_trl_without_the_wrapped_steps_fails_with_one_line():
    from trl import GRPOTrainer

    from stackelberg.training.trl_internals import UnsupportedTRLError, check_trl

    check_trl()  # the installed TRL has them

    class Renamed(GRPOTrainer):
        _calculate_rewards = None

    with pytest.raises(UnsupportedTRLError, match="has no _calculate_rewards") as err:
        check_trl(Renamed)
    assert "\n" not in str(err.value)


def test_the_prompt_dataset_prints_nothing_and_holds_what_datasets_would(monkeypatch):
    """datasets' own fingerprint disassembles a helper with print while holding stdout;
    under Prefect's log_prints those prints became lines of every GRPO run's log."""
    import builtins

    from datasets import Dataset

    from stackelberg.training.trl_bridge import prompt_dataset

    columns = {"instance_id": ["w-1", "w-2"], "desired": ['["a"]', "[]"], "weight": [1.0, 2.5]}
    printed = []
    real = builtins.print

    def spy(*args, **kwargs):
        if kwargs.get("file") is None:  # where Prefect's patched print logs
            printed.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(builtins, "print", spy)
    ours = prompt_dataset(PROMPTS, columns)
    assert printed == []
    theirs = Dataset.from_dict({"prompt": PROMPTS, **columns})
    assert printed  # what it replaced prints: the test can tell
    assert ours.features == theirs.features
    assert ours.to_list() == theirs.to_list()
    assert prompt_dataset(PROMPTS, columns)._fingerprint == ours._fingerprint
