"""GPU training without a GPU: the launch command lines and configs, and the trainer config
handed to TRL (built, not run)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from stackelberg.params import Params
from stackelberg.training.grpo_settings import GRPOSettings, train_precision
from stackelberg.training.launch import (
    LaunchError,
    accelerate_config,
    check_machine,
    launch_command,
    run_launched,
)
from stackelberg.training.trl_bridge import grpo_config, grpo_config_args

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _at_the_project_root(monkeypatch):
    """The shipped configs are named relative to the project root, where stages run."""
    monkeypatch.chdir(ROOT)


@pytest.mark.parametrize(
    "launch, zero_stage, config",
    [
        ("accelerate", 2, "configs/accelerate/multi_gpu.yaml"),
        ("deepspeed", 2, "configs/accelerate/zero2.yaml"),
        ("deepspeed", 3, "configs/accelerate/zero3.yaml"),
    ],
)
def test_the_command_line_names_the_config_processes_and_module(launch, zero_stage, config):
    s = GRPOSettings(launch=launch, num_processes=4, zero_stage=zero_stage)
    assert launch_command(s, "stages.grpo", ["job.pkl", "out/adapter"]) == [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--config_file",
        config,
        "--num_processes",
        "4",
        "-m",
        "stages.grpo",
        "job.pkl",
        "out/adapter",
    ]


def test_accelerates_own_parser_reads_the_command_line():
    from accelerate.commands.launch import launch_command_parser

    s = GRPOSettings(launch="deepspeed", num_processes=4, zero_stage=3)
    command = launch_command(s, "stages.grpo", ["job.pkl", "out/adapter"])
    args = launch_command_parser().parse_args(command[3:])
    assert (args.config_file, args.num_processes) == ("configs/accelerate/zero3.yaml", 4)
    assert args.module and args.training_script == "stages.grpo"
    assert args.training_script_args == ["job.pkl", "out/adapter"]


def test_a_users_accelerate_config_replaces_the_shipped_one(tmp_path):
    mine = tmp_path / "cluster.yaml"
    mine.write_text("distributed_type: MULTI_GPU\n")
    s = GRPOSettings(launch="deepspeed", num_processes=2, accelerate_config=str(mine))
    assert launch_command(s, "m", [])[4] == str(mine)


def test_no_command_line_without_a_launch():
    with pytest.raises(ValueError, match="launch is none"):
        launch_command(GRPOSettings(), "stages.grpo", [])


@pytest.mark.parametrize(
    "launch, zero_stage", [("accelerate", 2), ("deepspeed", 2), ("deepspeed", 3)]
)
def test_the_shipped_accelerate_configs_load_and_name_their_zero_config(launch, zero_stage):
    from accelerate.commands.config.config_args import load_config_from_file

    config = accelerate_config(GRPOSettings(launch=launch, zero_stage=zero_stage))
    loaded = load_config_from_file(str(config))
    if launch == "accelerate":
        assert loaded.distributed_type == "MULTI_GPU" and loaded.mixed_precision == "bf16"
        return
    assert loaded.distributed_type == "DEEPSPEED"
    ds_file = Path(loaded.deepspeed_config["deepspeed_config_file"])
    ds = json.loads(ds_file.read_text())
    assert ds["zero_optimization"]["stage"] == zero_stage
    # batch sizes and precision come from the GRPO config (the Trainer fills "auto")
    for key in ("train_micro_batch_size_per_gpu", "gradient_accumulation_steps"):
        assert ds[key] == "auto"
    assert ds["bf16"]["enabled"] == "auto"
    if zero_stage == 3:  # the adapter is gathered from the shards to be saved
        assert ds["zero_optimization"]["stage3_gather_16bit_weights_on_model_save"] is True
        assert loaded.deepspeed_config["zero3_init_flag"] is True


@pytest.mark.parametrize(
    "section, match",
    [
        ({"launch": "deepspeed", "zero_stage": 1}, "grpo.zero_stage"),
        ({"launch": "torchrun"}, "grpo.launch"),
        ({"num_processes": 2}, "num_processes 2 needs launch accelerate or deepspeed"),
        ({"accelerate_config": "x.yaml"}, "accelerate_config is read only with launch"),
        ({"launch": "accelerate", "accelerate_config": "no/such.yaml"}, "no/such.yaml'?: no such"),
        (
            {"launch": "accelerate", "num_processes": 3, "num_generations": 4},
            "num_processes 3 must divide the completions of a step",
        ),
        (
            {"launch": "accelerate", "num_processes": 2, "num_generations": 4, "micro_batch": 4},
            "micro_batch 4 must divide the completions of a step in each process",
        ),
        (
            {"use_vllm": True, "vllm_mode": "colocate", "vllm_tensor_parallel_size": 2},
            "vllm_tensor_parallel_size 2 must divide the training processes",
        ),
        ({"use_vllm": True, "vllm_mode": "remote"}, "grpo.vllm_mode"),
    ],
)
def test_settings_that_cannot_work_are_refused_at_load_in_one_line(section, match):
    with pytest.raises(ValidationError, match=match) as err:
        Params(grpo=section)
    from stackelberg.settings import one_line

    assert "\n" not in one_line(err.value)


def test_each_process_takes_its_share_of_the_step(tmp_path):
    s = GRPOSettings(
        launch="accelerate", num_processes=2, prompts_per_step=4, num_generations=2, micro_batch=2
    )
    assert (s.completions_per_step, s.completions_per_process, s.micro_steps) == (8, 4, 2)
    cfg = grpo_config(s, tmp_path, cuda=False, completion_limit=8)
    assert cfg.per_device_train_batch_size == 2
    assert cfg.gradient_accumulation_steps == cfg.steps_per_generation == 2
    # in 2 processes, TRL's generation batch is per_device x processes x steps = the step
    assert cfg.per_device_train_batch_size * 2 * cfg.steps_per_generation == 8


def test_bf16_trains_in_mixed_precision_with_bf16_weights(tmp_path):
    args = grpo_config_args(GRPOSettings(), tmp_path, cuda=True, completion_limit=8, bf16=True)
    assert args["bf16"] and not args["use_cpu"] and not args["fp16"]
    assert args["model_init_kwargs"] == {"dtype": "bfloat16"}
    cpu = grpo_config_args(GRPOSettings(), tmp_path, cuda=False, completion_limit=8, bf16=True)
    assert cpu["bf16"] and cpu["use_cpu"] and cpu["model_init_kwargs"] == {"dtype": "bfloat16"}
    f32 = grpo_config_args(GRPOSettings(), tmp_path, cuda=False, completion_limit=8, bf16=False)
    assert not f32["bf16"] and f32["model_init_kwargs"] == {"dtype": "float32"}


@pytest.mark.parametrize("native", [True, False])
def test_auto_precision_is_bf16_where_the_device_computes_it_natively(
    tmp_path, monkeypatch, native
):
    import torch

    from stackelberg.llm.local import loading

    monkeypatch.setattr(loading, "native_bf16", lambda: native)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: not native)
    expected = "bfloat16" if native else "float32"
    assert train_precision("auto", cuda=False) == expected
    assert train_precision("auto", cuda=True) == ("float32" if native else "bfloat16")
    for cuda in (True, False):
        assert train_precision("float32", cuda) == "float32"
        assert train_precision("bfloat16", cuda) == "bfloat16"
    args = grpo_config_args(GRPOSettings(), tmp_path, cuda=False, completion_limit=8)
    assert args["bf16"] == native and args["model_init_kwargs"] == {"dtype": expected}
    pinned = grpo_config_args(
        GRPOSettings(precision="float32"), tmp_path, cuda=False, completion_limit=8
    )
    assert not pinned["bf16"]


def test_vllm_server_mode_is_handed_to_trl(tmp_path):
    s = GRPOSettings(use_vllm=True, vllm_server_base_url="http://gpu1:8000", vllm_server_timeout=60)
    cfg = grpo_config(s, tmp_path, cuda=False, completion_limit=8, stop_ids=[198])
    assert cfg.use_vllm and cfg.vllm_mode == "server"
    assert (cfg.vllm_server_base_url, cfg.vllm_server_timeout) == ("http://gpu1:8000", 60)
    assert cfg.generation_kwargs == {"stop_token_ids": [198]}


def test_vllm_colocate_mode_is_handed_to_trl(tmp_path):
    s = GRPOSettings(
        use_vllm=True,
        vllm_mode="colocate",
        vllm_gpu_memory_utilization=0.4,
        vllm_tensor_parallel_size=2,
        launch="deepspeed",
        num_processes=2,
        prompts_per_step=4,
        num_generations=2,
    )
    cfg = grpo_config(s, tmp_path, cuda=False, completion_limit=8)
    assert cfg.use_vllm and cfg.vllm_mode == "colocate"
    assert (cfg.vllm_gpu_memory_utilization, cfg.vllm_tensor_parallel_size) == (0.4, 2)


def test_a_launch_this_machine_cannot_run_is_refused_in_one_line(tmp_path, monkeypatch):
    s = GRPOSettings(launch="deepspeed", num_processes=2, zero_stage=3)
    with pytest.raises(LaunchError, match="num_processes 2 needs as many CUDA GPUs; .* has 0"):
        check_machine(s, gpus=0)
    check_machine(s, gpus=2)
    monkeypatch.chdir(tmp_path)  # away from the project root: the shipped config is not here
    with pytest.raises(LaunchError, match="no accelerate config 'configs/accelerate/zero3.yaml'"):
        check_machine(s, gpus=2)
    check_machine(GRPOSettings(), gpus=0)  # in-process training needs no GPU
    nodes = tmp_path / "two_nodes.yaml"
    nodes.write_text("distributed_type: DEEPSPEED\nnum_machines: 2\n")
    check_machine(s.model_copy(update={"accelerate_config": str(nodes)}), gpus=1)


def test_vllm_without_a_gpu_or_without_vllm_is_refused_where_training_starts():
    s = GRPOSettings(use_vllm=True)  # params load on any machine
    with pytest.raises(LaunchError, match="use_vllm needs a CUDA GPU; this machine has none"):
        check_machine(s, gpus=0)
    if importlib.util.find_spec("vllm") is None:
        with pytest.raises(LaunchError, match="use_vllm needs vllm installed beside TRL"):
            check_machine(s, gpus=1)
    else:
        print("vllm is installed here: the missing-vllm refusal is not exercised")


def test_a_launched_command_streams_its_output_and_fails_in_one_line(capsys):
    script = "import sys; print('step 1'); print('step 2', file=sys.stderr); sys.exit(3)"
    with pytest.raises(LaunchError, match="failed \\(exit 3\\)") as err:
        run_launched([sys.executable, "-c", script])
    assert "\n" not in str(err.value)
    assert capsys.readouterr().out.splitlines() == ["step 1", "step 2"]
    run_launched([sys.executable, "-c", "print('done')"])
    with pytest.raises(LaunchError, match="cannot start"):
        run_launched(["/no/such/launcher"])


def test_local_models_on_cuda_load_in_bf16():
    import torch

    from stackelberg.llm.local.loading import weights_dtype

    assert weights_dtype("auto", torch.device("cuda")) == "bfloat16"
    assert weights_dtype("auto", torch.device("cuda:1")) == "bfloat16"
    assert weights_dtype("auto", torch.device("cpu")) == "float32"
    assert weights_dtype("float16", torch.device("cuda")) == "float16"
    with pytest.raises(ValueError, match="'int8' is for CPU"):
        weights_dtype("int8", torch.device("cuda"))


def test_a_cuda_device_without_a_gpu_is_refused_in_one_line(tmp_path):
    import torch

    from stackelberg.llm import LLMError, make_llm

    if torch.cuda.is_available():
        pytest.skip("a GPU is here: device cuda would load")
    with pytest.raises(LLMError, match="device 'cuda', but this machine has no CUDA GPU"):
        make_llm(backend="local", model=str(tmp_path), device="cuda", cache="off")


def test_the_grpo_stage_refuses_a_launch_without_gpus_before_starting_anything(tmp_path):
    import pickle

    import torch

    from flows.context import StageContext
    from stages import grpo as stage

    if torch.cuda.device_count() >= 2:
        pytest.skip("2 GPUs are here: the launch would start")
    params = Params(grpo={"launch": "accelerate", "num_processes": 2})
    ctx = StageContext("grpo", "werewolf", params)
    with pytest.raises(LaunchError, match="num_processes 2 needs as many CUDA GPUs"):
        stage.work(ctx, {"label": "train", "ids": ["w-1"]})
    # the launched processes get the stage's context as the stage holds it
    assert pickle.loads(pickle.dumps((ctx, ["w-1"]))) == (ctx, ["w-1"])


def test_bf16_training_on_a_gpu_without_bf16_is_refused_in_one_line(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    with pytest.raises(LaunchError, match="grpo.precision bfloat16: this GPU"):
        check_machine(GRPOSettings(precision="bfloat16"), gpus=1)
    check_machine(GRPOSettings(precision="auto"), gpus=1)  # auto falls back to float32
    check_machine(GRPOSettings(precision="bfloat16"), gpus=0)  # a CPU emulates it
