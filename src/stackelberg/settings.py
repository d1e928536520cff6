"""The base of every settings class: strict, frozen, and reported in one line when wrong.

Each library part declares its own settings (``LabelSettings``, ``SampleSettings``,
``ScoreSettings``, ``GRPOSettings``) on this base, and ``params.yaml`` is validated by those
very classes: a key exists in one place, with its type, default, bounds and description.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class Settings(BaseModel):
    """Unknown keys are refused, values are checked on construction, instances never change."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class SamplingSettings(Settings):
    """What every stage that samples an LLM in batches of instances sets (label, sample)."""

    temperature: float = Field(0.7, ge=0, description="sampling temperature")
    top_p: float = Field(0.9, gt=0, le=1, description="nucleus sampling")
    max_prompt_tokens: int = Field(768, ge=128, description="prompt budget; oldest history cut")
    batch_instances: int = Field(8, ge=1, description="instances per work item (pipeline)")


def one_line(err: ValidationError, prefix: str = "", root: str = "params") -> str:
    """A validation error as one line: ``where: what (got value)`` for each problem
    (``root`` names a problem of the whole object)."""
    parts = []
    for e in err.errors():
        loc = ".".join(str(x) for x in (prefix, *e["loc"]) if str(x))
        value = e.get("input")
        shown = f" (got {value!r})" if not isinstance(value, dict | list) else ""
        parts.append(f"{loc or root}: {e['msg'].removeprefix('Value error, ')}{shown}")
    return "; ".join(parts)
