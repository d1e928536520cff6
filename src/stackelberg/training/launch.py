"""Training on several GPUs: the ``accelerate launch`` command line of a GRPO run, and running it.

With ``grpo.launch`` ``accelerate`` or ``deepspeed`` the grpo stage does not train in its
own process: it starts ``accelerate launch`` with one process per GPU, each running the
stage's training module, and streams their output. Accelerate reads the config file (the
shipped ``configs/accelerate/*.yaml``, or ``grpo.accelerate_config``); the DeepSpeed ones
name the ZeRO config (``configs/deepspeed/zero2.json``, ``zero3.json``), whose ``auto``
values the Trainer fills from the GRPO config, as TRL documents.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from stackelberg.training.grpo_settings import GRPOSettings, machine_problem

#: the shipped accelerate configs, relative to the project root (where the stages run)
ACCELERATE_CONFIGS = Path("configs/accelerate")


class LaunchError(RuntimeError):
    """A launched training run could not start or failed (one line)."""


def accelerate_config(settings: GRPOSettings) -> Path:
    """The accelerate config file of ``settings``: the user's, else the shipped one."""
    if settings.accelerate_config:
        return Path(settings.accelerate_config).expanduser()
    if settings.launch == "deepspeed":
        return ACCELERATE_CONFIGS / f"zero{settings.zero_stage}.yaml"
    return ACCELERATE_CONFIGS / "multi_gpu.yaml"


def launch_command(settings: GRPOSettings, module: str, args: Sequence[str]) -> list[str]:
    """``accelerate launch`` running ``python -m module *args`` in ``num_processes`` processes.

    ``accelerate launch`` is run as this Python's ``-m accelerate.commands.launch``, so it is
    the environment's own whether or not its ``bin`` folder is on PATH.

    >>> s = GRPOSettings(launch="accelerate", num_processes=4)
    >>> " ".join(launch_command(s, "stages.grpo", ["job.pkl"])[1:])
    '-m accelerate.commands.launch --config_file configs/accelerate/multi_gpu.yaml --num_processes 4 -m stages.grpo job.pkl'
    """
    if settings.launch == "none":
        raise ValueError("launch_command: grpo.launch is none (training runs in-process)")
    return [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--config_file",
        str(accelerate_config(settings)),
        "--num_processes",
        str(settings.num_processes),
        "-m",
        module,
        *args,
    ]


def check_machine(settings: GRPOSettings, gpus: int) -> None:
    """Refuse in one line, before anything starts, training this machine (``gpus`` CUDA
    GPUs) cannot run. With the user's ``accelerate_config`` (several nodes, perhaps) the
    processes are not counted against this machine's GPUs."""
    problem = machine_problem(settings, gpus)
    if problem:
        raise LaunchError(problem)
    if settings.launch == "none":
        return
    config = accelerate_config(settings)
    if not config.is_file():
        raise LaunchError(
            f"grpo.launch {settings.launch}: no accelerate config {str(config)!r} "
            "(run from the project root, or set grpo.accelerate_config)"
        )
    # the shipped configs are one node's: one process per GPU of this machine
    if settings.accelerate_config is None and settings.num_processes > gpus:
        raise LaunchError(
            f"grpo.num_processes {settings.num_processes} needs as many CUDA GPUs; this "
            f"machine has {gpus} (set grpo.launch: none to train on one device)"
        )


def run_launched(command: Sequence[str]) -> None:
    """Run ``command``, each line of its output printed as it comes, and fail in one line."""
    try:
        process = subprocess.Popen(
            list(command), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
        )
    except OSError as err:
        raise LaunchError(f"cannot start {command[0]!r}: {err}") from None
    assert process.stdout is not None
    with process:
        for line in process.stdout:
            print(line, end="", flush=True)
    if process.returncode:
        raise LaunchError(
            f"launched training failed (exit {process.returncode}); its output is above: "
            + " ".join(command)
        )
