"""The tactic policy: a small network from a player's features to a softmax over the six
tactics, saved as a folder (``policy.pt``, the weights; ``policy.json``, its shape and the
names of its features and tactics, checked on load so a stale file is refused)."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import nn

from stackelberg.agents.tactics.features import FEATURES
from stackelberg.agents.tactics.speech import TACTIC_NAMES
from stackelberg.games.base import ConfigError
from stackelberg.io import atomic_writer

WEIGHTS = "policy.pt"
SHAPE = "policy.json"


class TacticPolicy(nn.Module):
    """One hidden layer (tanh), logits over ``TACTIC_NAMES``."""

    def __init__(self, hidden: int = 32) -> None:
        super().__init__()
        self.hidden = hidden
        self.net = nn.Sequential(
            nn.Linear(len(FEATURES), hidden), nn.Tanh(), nn.Linear(hidden, len(TACTIC_NAMES))
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def probabilities(self, vector: Sequence[float]) -> list[float]:
        with torch.no_grad():
            logits = self(torch.tensor([list(vector)], dtype=torch.float32))[0]
            return torch.softmax(logits, -1).tolist()

    def choose(self, vector: Sequence[float], rng: random.Random) -> int:
        """A tactic's index, drawn from the softmax with ``rng`` (seeded: the same game
        draws the same tactics)."""
        probs = self.probabilities(vector)
        return rng.choices(range(len(probs)), weights=probs)[0]


def save_policy(policy: TacticPolicy, folder: str | Path, **facts: object) -> Path:
    """Write the policy (atomically, file by file) with ``facts`` (e.g. how it was trained)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    # Saved to a file object: given a path, torch names the archive's folder after the
    # file (here a random temporary name), so the same weights would differ in bytes.
    with atomic_writer(folder / WEIGHTS, "wb") as fh:
        torch.save(policy.state_dict(), fh)
    shape = {"hidden": policy.hidden, "features": FEATURES, "tactics": TACTIC_NAMES, **facts}
    with atomic_writer(folder / SHAPE) as fh:
        json.dump(shape, fh, indent=1)
    return folder


def load_policy(folder: str | Path) -> TacticPolicy:
    """The policy saved in ``folder``; ConfigError (one line) when it is missing or was
    trained on other features or tactics."""
    folder = Path(folder)
    try:
        shape = json.loads((folder / SHAPE).read_text())
    except FileNotFoundError:
        raise ConfigError(
            f"no tactic policy in {folder} (train one: python -m flows.run tactics onuw)"
        ) from None
    for key, names in (("features", FEATURES), ("tactics", TACTIC_NAMES)):
        if tuple(shape.get(key, ())) != names:
            raise ConfigError(
                f"tactic policy {folder}: trained on other {key} than this code has; retrain it"
            )
    policy = TacticPolicy(int(shape["hidden"]))
    policy.load_state_dict(torch.load(folder / WEIGHTS, weights_only=True))
    policy.eval()
    return policy


__all__ = ["SHAPE", "WEIGHTS", "TacticPolicy", "load_policy", "save_policy"]
