"""The ``models`` section: the model of each role, one or a weighted list drawn per game."""

from __future__ import annotations

import random
from typing import Any

from pydantic import Field, field_validator, model_validator

from stackelberg.llm.config import LLMConfig
from stackelberg.persuasion.measurer import MeasurerEntry, member_names
from stackelberg.settings import Settings


class WeightedLLMConfig(LLMConfig):
    """One model of a list: drawn for a game with probability proportional to ``weight``."""

    weight: float = Field(1.0, gt=0, description="relative chance of this model per game")

    def config(self) -> LLMConfig:
        return LLMConfig(**self.model_dump(exclude={"weight"}))


#: a model, or a list of weighted models of which each game draws one (from its seed)
ModelEntry = LLMConfig | list[WeightedLLMConfig]


def entry_models(entry: ModelEntry | None) -> list[LLMConfig]:
    """Every model an entry may use (none for an optional role left out, nor for the exact
    follower, which is no model)."""
    if isinstance(entry, list):
        return [m.config() for m in entry]
    return [entry] if isinstance(entry, LLMConfig) else []


def draw_model(entry: ModelEntry, seed: int) -> LLMConfig:
    """The model of the game with this seed: the same seed always draws the same model, so
    paired conditions (X and refiner+X on one seed) meet the same model."""
    if not isinstance(entry, list):
        return entry
    rng = random.Random(f"model:{seed}")
    return rng.choices(entry, weights=[m.weight for m in entry])[0].config()


class ModelsParams(Settings):
    labeler: ModelEntry = Field(
        default_factory=LLMConfig,
        description="the intent labeler of label.scheme per_response and json, unused by "
        "scripted; also the LLM evaluator of Sotopia's evaluator: llm (a list: each "
        "instance's game draws one)",
    )
    refiner: LLMConfig = Field(
        default_factory=lambda: LLMConfig(model="models/base"),
        description="the Refiner's base model, on which GRPO trains a LoRA (loaded locally: "
        "a checkpoint folder or hub name); openai: a vLLM server serving it under that name "
        "and each trained adapter folder as a LoRA module named after it (models/refiner/GAME: "
        "refiner-GAME)",
    )
    measurer: MeasurerEntry = Field(
        default_factory=lambda: LLMConfig(model="models/base"),
        description="the Measurer that plays the follower and scores responses (a list: an "
        "ensemble follower, every member scores and the reward is the weighted mean of "
        "their rewards, each member's kept beside it)",
    )
    player: ModelEntry = Field(
        default_factory=lambda: LLMConfig(model="models/base"),
        description="the LLM players (direct, react) of self-play and of the tournaments "
        "(a list: each game draws one)",
    )
    unseen_follower: LLMConfig | None = Field(
        None,
        description="a follower the Refiner never trained against (another model family): "
        "it rescores the held-out candidates its tables read (the untrained Refiner's first "
        "evaluate.n and best-of picks, the trained Refiner's), beside the Measurer (the "
        "Measurer is not the real follower); null: none",
    )

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, data: Any) -> Any:
        if isinstance(data, dict) and "backend" in data:
            raise ValueError("'backend' is now 'labeler' (the intent labeling LLM): rename the key")
        return data

    @field_validator("labeler", "player", "measurer")
    @classmethod
    def _not_empty(cls, value: ModelEntry) -> ModelEntry:
        if isinstance(value, list) and not value:
            raise ValueError("an empty list of models; give one model or several")
        return value

    @field_validator("measurer")
    @classmethod
    def _members_named_once(cls, value: MeasurerEntry) -> MeasurerEntry:
        if isinstance(value, list):
            names = member_names(value)
            if twice := sorted({n for n in names if names.count(n) > 1}):
                raise ValueError(
                    f"two members named {twice[0]!r}; give each member its own name (name: ...)"
                )
        return value
