"""Answers of a pretend API chat model that plays games, for the loopback test server.

Deterministic in the conversation: the same prompt gets the same answer. Choices are
answered in the ways real chat models answer (the option's number, its words in a sentence,
a player who is not an option, words that name nothing), and about one choice in eleven is
"stubborn": every answer to it is unusable, so the player's re-asks run out and it takes a
random legal option. Labeling prompts get follower sentences or JSON, speeches a sentence.
"""

from __future__ import annotations

import hashlib
import json
import re

_OPTION = re.compile(r"^(\d+)\. (.+)$", re.M)
_ME = re.compile(r"You are (Player \d+)")


def _hash(*parts: object) -> int:
    return int(hashlib.sha256(repr(parts).encode()).hexdigest()[:12], 16)


def _options(text: str) -> list[str]:
    block = text.split("Options:\n", 1)[1] if "Options:\n" in text else ""
    return [label for _, label in _OPTION.findall(block)]


def choice_answer(system: str | None, messages: list[dict]) -> str:
    first = messages[0]["content"]
    labels = _options(first)
    h = _hash(system, first)
    asks = sum(m["role"] == "user" for m in messages)
    if h % 11 == 0:
        return ["Let me think about it.", "Player 99", "I really cannot say."][(asks - 1) % 3]
    if asks > 1:
        return str(1 + h % len(labels))
    style = h % 5
    if style == 0:
        return "Hmm, that is a hard one."
    if style == 1:
        return f"I choose {labels[h % len(labels)]}."
    if style == 2:
        return "Player 99, without a doubt."
    return f"{1 + h % len(labels)}"


def label_answer(text: str) -> str:
    speaker = re.search(r"(Player \d+) \(secretly", text)
    s = speaker.group(1) if speaker else "the speaker"
    if "Answer with JSON only" in text:
        k = int(re.search(r"Write (\d+) things", text).group(1))
        desired = [f"I agree with {s} on point {i + 1}." for i in range(k)]
        undesired = [f"I think {s} is hiding something, reason {i + 1}." for i in range(k)]
        return json.dumps({"desired": desired, "undesired": undesired})
    if "WANTS" in text:
        return f"I trust {s} and will vote with them."
    return f"I do not believe {s} at all."


_SPEECHES = (
    "I trust {a}. {b} is acting strangely.",
    "I have been watching {b} closely, and I think we should vote carefully.",
    "{a} made a good point. I am on the village side.",
    "I suspect {b}. Let us hear what {a} says first.",
)


def rating_answer(system: str | None, messages: list[dict]) -> str:
    """strategist's belief step: ratings in its one-line form, but about one first answer in
    four rates nobody (the re-ask then gets ratings)."""
    h = _hash(system, messages[0]["content"])
    if h % 4 == 0 and len(messages) == 1:
        return "I am not sure about anyone yet."
    a, b = h % 6 + 1, (h // 6) % 6 + 1
    return f"Player {a}: evil {h % 5 - 2:+d}, Merlin 0; Player {b}: evil -1, Merlin {h % 3 - 1:+d}"


def play_answer(system: str | None, messages: list[dict], index: int) -> str:
    """The pretend model's answer to a conversation (``index``: the n-th sample)."""
    last = messages[-1]["content"]
    first = messages[0]["content"]
    if "Answer with the number of one option" in first:
        return choice_answer(system, messages)
    if "WANTS" in last or "does NOT want" in last or "Answer with JSON only" in last:
        return label_answer(last)
    if "rate evil and Merlin" in first:
        return rating_answer(system, messages)
    if "Before acting, think" in last:
        return "I should keep an eye on the quiet players."
    me = _ME.search(system or "")
    n = int(me.group(1).split()[1]) if me else 1
    h = _hash(system, last, index)
    a, b = f"Player {n % 5 + 1}", f"Player {(n + 1) % 5 + 1}"
    return _SPEECHES[h % len(_SPEECHES)].format(a=a, b=b)
