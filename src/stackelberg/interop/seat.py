"""A seat's side of a game, as the outside frameworks show it: what the player reads now, the
legal options in words, and the reward at the end.

The words are those an LLM player in the seat reads (``agents.prompting``): the rules, who
the player is, the game so far, and the question it owes, a choice's legal options as the
numbered list a player answers in words (``agents.choice``). An outside agent thus reads
the very prompt this project's LLM players read.
"""

from __future__ import annotations

from stackelberg.agents.choice import choice_question
from stackelberg.agents.prompting import (
    PromptSpec,
    build_messages,
    history_lines,
    option_label,
    player_spec,
    speech_question,
    speech_style,
)
from stackelberg.games import Decision, Game
from stackelberg.llm import Message

#: the question of a seat that owes no decision now
WAITING = "Another player is deciding; wait for your turn."
GAME_OVER = "The game is over."
#: a scored game's reward: each seat's score on this dimension of its result (Sotopia's
#: goal completion, 0 to 10)
REWARD_DIMENSION = "goal"


def option_labels(decision: Decision) -> list[str]:
    """The legal options of a choice in words, in the engine's order (the numbered list)."""
    return [option_label(o, decision.kind) for o in decision.options or ()]


def seat_spec(game: Game, player: int) -> PromptSpec:
    """The fixed parts of ``player``'s prompt now: the system part (rules, identity) and the
    question it owes (a speech, or a choice as a numbered list), or a line saying it waits
    or that the game is over."""
    decision = game.decision()
    if decision is None:
        return player_spec(game, player, GAME_OVER)
    if decision.player != player:
        return player_spec(game, player, WAITING)
    if decision.options is None:
        question = speech_question(game, player, decision.prompt)
        return player_spec(game, player, question, speech_style(game))
    return player_spec(game, player, choice_question(decision.prompt, option_labels(decision)))


def seat_messages(game: Game, player: int) -> list[Message]:
    """The chat prompt of ``player`` now: ``seat_spec`` around the whole game it saw."""
    lines = history_lines(game, player, game.events)
    return build_messages(seat_spec(game, player), lines)


def seat_view(game: Game, player: int) -> str:
    """``seat_messages`` as one text."""
    return "\n\n".join(m["content"] for m in seat_messages(game, player))


def final_rewards(game: Game) -> list[float]:
    """Each seat's reward of a finished game: +1 when its team won, -1 when it lost, 0 for
    everyone in a draw; a scored game (Sotopia): the seat's ``REWARD_DIMENSION`` score."""
    result = game.result()
    if game.spec.dimensions:
        return [float(part["scores"][REWARD_DIMENSION]) for part in result["scores"]]
    if result["winner"] == "draw":
        return [0.0] * game.n_players
    return [1.0 if p in result["winners"] else -1.0 for p in range(game.n_players)]


__all__ = [
    "GAME_OVER",
    "REWARD_DIMENSION",
    "WAITING",
    "final_rewards",
    "option_labels",
    "seat_messages",
    "seat_spec",
    "seat_view",
]
