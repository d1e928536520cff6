"""Prompts of LLM players, built from what a player may know.

One builder serves the LLM agents, the Measurer's follower prompt and the Refiner, so that
the follower the Measurer imitates reads exactly what an LLM player in that seat would
read. Prompts are short and concrete (the embedded model has 135M parameters): the rules,
who you are, the game so far (oldest lines dropped to fit, never cut mid-line), and one
question.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from stackelberg.agents.prompts import describe_event, prompts_of, rules_text
from stackelberg.games.base import Event, Game, player_name
from stackelberg.llm import ContextLengthError, Message, fit_history

#: The record's event type of an agent's private reasoning before it acts (its analysis,
#: belief, plan or tactic): {step, text}, visible to that player only. ``describe_event``
#: words no such event, so no player's prompt and no Measurer history ever reads it;
#: transcripts and ``stackelberg view`` show it (``transcript_line``).
REASONING = "reasoning"
_BOOL_LABELS = {"vote": ("approve", "reject"), "quest": ("success", "fail")}
#: what None means where it is not an abstention (the Avalon Assassin keeps the guess)
_NONE_LABELS = {"assassinate": "wait (no guess yet)"}
_CENTER = re.compile(r"^center:([\d,]+)$")


def option_label(option: Any, kind: str = "") -> str:
    """Words for a legal option, as a player would say it."""
    if option is None:
        return _NONE_LABELS.get(kind, "nobody (abstain)")
    if isinstance(option, bool):
        yes, no = _BOOL_LABELS.get(kind, ("yes", "no"))
        return yes if option else no
    if isinstance(option, int):
        return player_name(option)
    if isinstance(option, tuple) and all(isinstance(x, int) for x in option):
        return " and ".join(player_name(x) for x in option)
    if isinstance(option, str) and (m := _CENTER.match(option)):
        cards = [str(int(i) + 1) for i in m.group(1).split(",")]
        return f"centre card{'s' if len(cards) > 1 else ''} {' and '.join(cards)}"
    return str(option)


def history_lines(game: Game, viewer: int, events: Sequence[Event]) -> list[str]:
    """The events a viewer saw, one line each, as the game's prompts word them."""
    lines = []
    for ev in events:
        if ev.visible(viewer) and (line := describe_event(game, ev, viewer)):
            lines.append(line)
    return lines


def narrate(game: Game, event: Event) -> str | None:
    """One line for an event as the game master's log shows it: private events name who
    saw them ("(Player 3 only) ..."); None for events without a line."""
    text = describe_event(game, event, -1)
    if text and event.visible_to != "all":
        who = ", ".join(player_name(p) for p in event.visible_to) or "nobody"
        text = f"({who} only) {text}"
    return text


def transcript_line(game: Game, event: Event) -> str | None:
    """An event's line in a transcript: ``narrate``'s, and for a player's private reasoning
    (which ``describe_event`` words not, so no prompt reads it) the step and its text, marked as
    seen by that player only."""
    if event.type != REASONING:
        return narrate(game, event)
    step = event.data["step"].replace("_", " ")
    return f"({player_name(event.player)} only) {step}: {event.data['text']}"


def global_lines(game: Game, events: Sequence[Event]) -> list[str]:
    """Every event, one line each, as the game master saw it (``narrate``)."""
    return [line for ev in events if (line := narrate(game, ev))]


def identity(game: Game, player: int) -> str:
    """Who a player is; a game whose prompts module states ``identity`` says it its way
    (Sotopia: the character, its goal and secret)."""
    if own := getattr(prompts_of(game.name), "identity", None):
        return own(game, player)
    me = game.players[player]
    role = me.role.replace("_", " ")
    return f"You are {me.name}. Your secret role: {role} (team {me.team})."


#: the line above the history in the user turn of a prompt (not of a speech's: player_spec)
HISTORY_HEADING = "The game so far:"


@dataclass(frozen=True)
class PromptSpec:
    """The fixed parts of a player prompt; the history between them is fitted."""

    system: str
    question: str
    assistant_prefix: str = ""
    #: the line above the history ("": the user turn starts with the history itself)
    heading: str = HISTORY_HEADING


def player_spec(game: Game, player: int, question: str, style: str = "") -> PromptSpec:
    """The system part is the same for every prompt of a seat (rules, identity) and what
    varies per decision (style, question) comes after the history, so that consecutive
    prompts of a seat share their start and a backend can reuse its computed prefix.

    A prompt for a speech (one with a ``style``: a player's, and the Measurer's follower's)
    has no heading above its history: the embedded model copies the first line of its user
    turn as its answer, and a copied heading is no speech (``spoken``). Without the heading
    11 of 452 sampled speeches were no speech instead of 34 (113 speech prompts of the four
    games, 4 samples each); answers that copied a history line rose from 12 to 20.
    """
    system = f"{rules_text(game)}\n\n{identity(game, player)}"
    if not style:
        return PromptSpec(system=system, question=question)
    return PromptSpec(system=system, question=f"{style}\n{question}", heading="")


def build_messages(spec: PromptSpec, lines: Sequence[str]) -> list[Message]:
    history = "\n".join(lines) if lines else "(nothing has happened yet)"
    above = f"{spec.heading}\n" if spec.heading else ""
    user = f"{above}{history}\n\n{spec.question}"
    messages = [{"role": "system", "content": spec.system}, {"role": "user", "content": user}]
    if spec.assistant_prefix:
        messages.append({"role": "assistant", "content": spec.assistant_prefix})
    return messages


def fitted_messages(
    llm: Any, spec: PromptSpec, lines: Sequence[str], reserve: int, limit: int | None = None
) -> tuple[list[Message], int]:
    """The prompt with as much recent history as fits; returns it and the lines dropped.

    ``limit`` is a budget for speed, below the model's window: when even the fixed part
    (rules, role, question) exceeds it, the prompt keeps no history rather than failing;
    only the model's own window is a hard limit.
    """
    lines = list(lines)
    build = lambda kept: build_messages(spec, kept)  # noqa: E731
    try:
        return fit_history(llm, build, lines, reserve, limit)
    except ContextLengthError:
        if limit is None or limit >= llm.context_window:
            raise
        return fit_history(llm, build, [], reserve)[0], len(lines)


SPEECH_STYLE = (
    "Speak as your character in one or two short sentences. Do not reveal your secret role "
    "unless it helps your team."
)


def speech_style(game: Game) -> str:
    """How to speak: the game's own ``SPEECH_STYLE`` where its prompts module states one."""
    return getattr(prompts_of(game.name), "SPEECH_STYLE", SPEECH_STYLE)


_SPEAKER_PREFIX = re.compile(r"^\s*(\*\*)?(player\s*\d+|me|i)\s*(says)?\s*[:\-]\s*", re.I)
#: A game-log line's label ("Night 1:", "Day 2:"), as a small model echoes it from its prompt.
LOG_LABEL = r"[a-z]+\s+\d+\s*:"
_ECHOED_LOG_LABEL = re.compile(rf"^\s*{LOG_LABEL}\s*", re.I)


def clean_speech(text: str, max_sentences: int = 3) -> str:
    """A generated speech as one clean line: no speaker tag, quotes or trailing fragment."""
    text = text.strip().split("\n\n")[0]
    text = " ".join(text.split())
    text = _SPEAKER_PREFIX.sub("", text).strip().strip('"').strip()
    sentences = [x.strip() for x in re.findall(r"[^.!?]+[.!?]+", text)]
    if sentences:
        text = " ".join(list(dict.fromkeys(sentences))[:max_sentences])
    return text


def spoken(text: str) -> str:
    """A player's generated speech (``clean_speech``) without what a small model echoes from
    its prompt: a game-log label before it ("Day 1: I trust ...") is dropped, and a heading
    alone ("The game so far:") is no speech (empty)."""
    speech = clean_speech(_ECHOED_LOG_LABEL.sub("", text.strip(), count=1))
    return "" if speech.endswith(":") else speech


def speech_question(game: Game, player: int, prompt: str) -> str:
    """Ask for speech with a concrete example: small models follow examples, not rules."""
    if example := getattr(prompts_of(game.name), "speech_example", None):
        return f"{prompt}\nFor example: {example(game, player)}"
    n = game.n_players
    a, b = player_name((player + 1) % n), player_name((player + 2) % n)
    return (
        f"{prompt}\nSay one or two sentences to the table, for example: "
        f'"I trust {a}. {b} is acting strangely."'
    )


#: The reasoning steps of LLM players (``llm_agents``), one LLM call each: the step's name
#: (as the record keeps it) -> how the later prompts of the same decision name its text,
#: and what the step asks. Short and concrete, for the embedded model.
REASONING_STEPS: dict[str, tuple[str, str]] = {
    "thought": (
        "Your private thought",
        "Before acting, think: in one sentence, what should you do now and why?",
    ),
    "first_order": (
        "Your reading of the others",
        "Think about the other players first: in one or two sentences, what role does each "
        "of them probably have, and who supports or suspects whom?",
    ),
    "draft": (
        "Your draft",
        "Formulate your move: in one or two sentences, what will you do now and why?",
    ),
    "analysis": (
        "Your analysis",
        "Analyse the game so far: in one or two sentences, what roles and aims do the other "
        "players seem to have?",
    ),
    "strategy": (
        "Your strategy",
        "Set your strategy: in one or two sentences, what is your plan from now to the end "
        "of the game?",
    ),
    "action": (
        "Your action",
        "Name the action your speech serves, in a few words: whom you accuse, defend or "
        "support, or what you claim.",
    ),
    "belief": (
        "Your belief",
        "Work out which card each player, you included, most likely holds now: the night "
        "may have moved cards, and some players lie. Answer in one or two sentences.",
    ),
    "tactic": ("Your speaking tactic", "Choose your speaking tactic for this speech."),
    "guide": (
        "Your answers to the guide",
        "Answer the questions above briefly, in one or two sentences.",
    ),
    # lspo: chosen by its solved policy, never asked (the question is for the record's sake)
    "latent_strategy": ("Your speaking strategy", "Choose the strategy of this speech."),
    "social_memory": (
        "Your notes on the other",
        "Update your notes on the other character: in one or two sentences, what have they "
        "shown so far of what they want, believe and feel?",
    ),
    "mental_state": (
        "Your reading of the other",
        "Think about the other character's mind: in one or two sentences, what do they "
        "believe, want and intend now, and how do they feel?",
    ),
    "social_strategy": (
        "Your approach",
        "Choose your approach: in one or two sentences, what will you do next to reach your "
        "goal while keeping to the social norms of this situation and your relationship?",
    ),
}
#: ReCon's refinement: the second-order view of the draft, asked with the final answer
SECOND_ORDER = (
    "Now refine your draft from the others' point of view: how will they read your answer, "
    "and what would it give away? Answer with the refined version."
)
#: LASI's strategy step sees the strategy it set at its previous turn
PREVIOUS_STRATEGY = "Your strategy so far"
#: llm_ins: the line before its speech, after the tactic it chose
IN_TACTIC = "Speak in that tactic."
#: lspo: the line before its speech, after the latent strategy its policy chose
IN_LATENT_STRATEGY = "Speak in that strategy, in your own words."
#: metamind's memory steps see the notes they kept at the previous turn
PREVIOUS_NOTES = "Your notes so far"
#: strategist: its intended action (from its search), before its guide and its speech
INTENDED_ACTION = "Your intended action"
#: strategist: the line before its speech, after its answers to the guide
PUSH_ACTION = "Now speak: win the table over to your intended action, and do not reveal your role."
