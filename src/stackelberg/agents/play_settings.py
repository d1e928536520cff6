"""How LLM players play in a stage that seats them: the ``selfplay`` section and the player
keys the ``evaluate`` section shares (speech and reasoning budgets, how options are chosen)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from stackelberg.agents.llm_agents import MAX_SPEECH_ATTEMPTS
from stackelberg.settings import Settings


class PlayerSettings(Settings):
    """How the LLM players of a stage play (self-play, tournaments)."""

    choice: Literal["auto", "score", "generate"] = Field(
        "auto",
        description="how LLM players choose among legal options: score each option (needs "
        "log-probabilities), generate an answer to a numbered list, or auto (score where the "
        "model can)",
    )
    max_choice_attempts: int = Field(
        3, ge=1, description="generate: answers asked for before a random legal option"
    )
    max_speech_attempts: int = Field(
        MAX_SPEECH_ATTEMPTS,
        ge=1,
        description="LLM players: samples of a speech (each with its own seed) while the "
        "model only echoes its prompt (e.g. a heading), before the fallback line",
    )
    speech_tokens: int = Field(32, ge=4, description="LLM players: new tokens per speech")
    thought_tokens: int = Field(40, ge=4, description="react players: new tokens per thought")
    reasoning_tokens: int = Field(
        48,
        ge=4,
        description="recon, lasi, belief, llm_ins, rl_ins players: new tokens per reasoning step "
        "(analysis, draft, strategy, belief)",
    )
    max_prompt_tokens: int = Field(512, ge=128, description="LLM players: prompt budget")

    def agent_options(self) -> dict[str, Any]:
        """The keyword arguments of an LLM agent."""
        return {
            "choice": self.choice,
            "max_choice_attempts": self.max_choice_attempts,
            "max_speech_attempts": self.max_speech_attempts,
            "speech_tokens": self.speech_tokens,
            "thought_tokens": self.thought_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "max_prompt_tokens": self.max_prompt_tokens,
        }


class SelfplaySettings(PlayerSettings):
    games: int = Field(20, ge=1, description="games per game type")
    seed: int = Field(0, description="seed of the first game; game i uses seed + i")
    agents: str = Field("scripted", description="agent kind for all seats, or one per seat")
    options: dict[str, Any] = Field(
        default_factory=dict, description="game options (docs/games.md)"
    )
    batch_games: int = Field(8, ge=1, description="games played at once (LLM calls batched)")
