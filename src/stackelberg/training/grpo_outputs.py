"""What a GRPO run leaves: the adapter folder, its settings and step history, and the rates
read from that history.

The adapter is written to a folder beside ``output_dir`` and swapped into place
(``stackelberg.io``), so a killed run leaves the previous adapter or the new one, never half
of one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from stackelberg.io import atomic_dir

#: PEFT's adapter config, whose module list it writes in set order (a run's hash seed)
ADAPTER_CONFIG = "adapter_config.json"
#: what a warm-start folder holds beside its adapter: its source and fit (alone where
#: ``warm_start.source`` is none: the folder is a DVC output either way)
WARM_START_INFO = "warm_start.json"
#: the run's settings, written into the adapter folder
SETTINGS_FILE = "grpo_settings.json"
#: the run's step history, written beside the adapter by the pipeline's grpo stage
TRAIN_HISTORY = "train_history.json"
#: the folder, inside a game's Refiner, of its extra Refiners: those trained beside it on the
#: same instances (``grpo.ablations``, ``grpo.views``, ``grpo.member_refiners``), each in a
#: folder of its name
EXTRA = "extra"
#: the joint Refiner's name (``grpo.joint``): its folder models/refiner/joint (the stage
#: grpo_joint), its MLflow model refiner-joint, its seats refiner-joint+X
JOINT_REFINER = "joint"
#: the warm start's name as a held-out Refiner (its adapter alone, before GRPO), beside
#: the trained one where ``warm_start.source`` fitted one
WARM_START_REFINER = "warm_start"
#: what the joint Refiner's folder holds beside the adapter: the games it trained on
#: (written without ``grpo.joint`` too, naming none: the folder is a DVC output either way)
JOINT_GAMES = "joint_games.json"
#: TRL's metric of the share of a step's completions that hit max_completion_length
CLIPPED_RATIO = "completions/clipped_ratio"
#: the share of a step's completions that parsed, logged by the caller's reward function
PARSE_RATE = "refiner/parse_rate"


def train_history_rates(history: Sequence[Mapping[str, Any]], completions_per_step: int) -> dict:
    """A run's completions, the share that ended before the token limit (1 - TRL's
    ``completions/clipped_ratio``) and the share that parsed (``PARSE_RATE``), over the
    steps that logged them (each step has as many completions); NaN where none did.

    >>> train_history_rates([{CLIPPED_RATIO: 0.25, PARSE_RATE: 1.0}, {CLIPPED_RATIO: 0.75}], 4)
    {'completions': 8, 'ended_rate': 0.5, 'parse_rate': 1.0}
    """

    def mean(key: str) -> float:
        values = [float(h[key]) for h in history if isinstance(h.get(key), int | float)]
        return sum(values) / len(values) if values else float("nan")

    steps = sum(1 for h in history if CLIPPED_RATIO in h)
    return {
        "completions": steps * completions_per_step,
        "ended_rate": 1.0 - mean(CLIPPED_RATIO),
        "parse_rate": mean(PARSE_RATE),
    }


def check_replaceable(out: Path) -> None:
    """Refuse to replace a folder that is neither empty nor a previous adapter (or a joint
    Refiner's folder that names no game, ``write_no_joint``, or a warm start's folder
    without an adapter, ``warm_start.source: none``)."""
    previous = any((out / name).exists() for name in (ADAPTER_CONFIG, JOINT_GAMES, WARM_START_INFO))
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not previous)):
        raise ValueError(
            f"output_dir {str(out)!r} exists and is not a PEFT adapter folder; "
            "choose a new or empty folder (a previous adapter there is replaced)"
        )


def stable_adapter_config(data: bytes) -> bytes:
    """The adapter config with ``target_modules`` sorted: PEFT keeps them in a set, so the
    same training wrote the list in another order each run and DVC saw another file.

    >>> json.loads(stable_adapter_config(b'{"target_modules": ["v_proj", "q_proj"]}'))
    {'target_modules': ['q_proj', 'v_proj']}
    """
    config = json.loads(data)
    if isinstance(config.get("target_modules"), list):
        config["target_modules"] = sorted(config["target_modules"])
    return json.dumps(config, indent=2, sort_keys=True).encode()


def write_no_joint(output_dir: str | Path) -> Path:
    """The joint Refiner's folder without ``grpo.joint``: its games file naming none, no
    adapter (the folder is a DVC output the evaluate stage reads either way)."""
    out = Path(output_dir).expanduser()
    check_replaceable(out)
    with atomic_dir(out) as staged:
        (staged / JOINT_GAMES).write_text("[]")
    return out


def write_adapter(files: dict[str, bytes], output_dir: str | Path) -> Path:
    """Write an adapter's files (name -> bytes) to ``output_dir`` atomically, replacing a
    previous adapter there; its config's module list in a fixed order."""
    out = Path(output_dir).expanduser()
    if ADAPTER_CONFIG not in files:
        raise ValueError(f"{out}: not a PEFT adapter (no adapter_config.json among its files)")
    check_replaceable(out)
    with atomic_dir(out) as staged:
        for name, data in files.items():  # a name may hold a folder ("extra/...")
            if Path(name).name == ADAPTER_CONFIG:
                data = stable_adapter_config(data)
            (staged / name).parent.mkdir(parents=True, exist_ok=True)
            (staged / name).write_bytes(data)
    return out
