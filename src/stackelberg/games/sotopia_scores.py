"""Sotopia's seven dimensions and the rule-based evaluator (no LLM, deterministic).

Each character of an episode gets a score per dimension on the dimension's own range and a
reason. The LLM evaluator (stackelberg.evaluation.judge) fills the same layout; this one
reads only the transcript and the scenario's keywords, so that scripted self-play, the
embedded default and the tests do not depend on a model's judgement:

- goal (0..10): each goal keyword the OTHER character said counts 1, one only this character
  said counts 1/2 (it asked but was not answered); 10 x that share of the keywords.
- believability (0..10): 10 x the share of this character's turns that were neither a
  repeated utterance nor silence.
- knowledge (0..10): 2 points per question asked (a turn with "?"), at most 10.
- secret (-10..0): -10 x the share of its secret words this character said.
- relationship (-5..5): +1 per turn with courtesy words, -1 per turn with rude words; -2 for
  leaving before its second turn.
- social_rules (-10..0): -2 per turn with rude words.
- financial_and_material_benefits (-5..5): for negotiation and exchange scenarios,
  (goal - 5) / 2 rounded; 0 otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

#: dimension -> (lowest, highest), in Sotopia's order of reading
DIMENSIONS: dict[str, tuple[int, int]] = {
    "goal": (0, 10),
    "believability": (0, 10),
    "knowledge": (0, 10),
    "secret": (-10, 0),
    "relationship": (-5, 5),
    "social_rules": (-10, 0),
    "financial_and_material_benefits": (-5, 5),
}
COURTESY = re.compile(r"\b(please|thank(s| you)|appreciate|sorry|grateful|kind of you)\b", re.I)
RUDE = re.compile(r"\b(stupid|idiot|shut up|ridiculous|pathetic|liar|get lost|whatever)\b", re.I)
MATERIAL = ("negotiation", "exchange")


def clamp(dimension: str, value: float) -> tuple[float, bool]:
    """``value`` inside the dimension's range, and whether it had to be moved."""
    low, high = DIMENSIONS[dimension]
    inside = min(max(value, low), high)
    return inside, inside != value


def said(words: str, text: str) -> bool:
    """Whether ``text`` says ``words`` (whole words, any case): how a keyword counts."""
    return re.search(rf"\b{re.escape(words)}\b", text, re.I) is not None


def rule_scores(
    turns: Sequence[Mapping[str, Any]],
    characters: Sequence[Mapping[str, Any]],
    category: str,
) -> list[dict[str, Any]]:
    """Per character: ``{"scores": {dim: value}, "reasons": {dim: text}}``.

    ``turns``: ``{"player", "action", "text"}`` in order (action: speak, act, none, leave);
    ``characters``: ``{"goal_keywords", "secret_words"}`` per seat."""
    out = []
    for me, char in enumerate(characters):
        mine = [t for t in turns if t["player"] == me]
        theirs = " ".join(t["text"] for t in turns if t["player"] != me)
        own = " ".join(t["text"] for t in mine)
        keys = list(char["goal_keywords"])
        reached = [k for k in keys if said(k, theirs)]
        asked = [k for k in keys if k not in reached and said(k, own)]
        goal = round(10 * (len(reached) + 0.5 * len(asked)) / len(keys), 1)
        texts = [t["text"].lower() for t in mine if t["action"] in ("speak", "act") and t["text"]]
        fresh = len(dict.fromkeys(texts))
        believe = round(10 * fresh / len(mine), 1) if mine else 0.0
        questions = sum("?" in t["text"] for t in mine)
        secrets = list(char.get("secret_words") or ())
        leaked = [w for w in secrets if said(w, own)]
        polite = sum(bool(COURTESY.search(t["text"])) for t in mine)
        rude = sum(bool(RUDE.search(t["text"])) for t in mine)
        early = any(t["action"] == "leave" for t in mine[:1])
        relation = polite - rude - (2 if early else 0)
        material = round((goal - 5) / 2) if category in MATERIAL else 0
        raw = {
            "goal": goal,
            "believability": believe,
            "knowledge": min(10, 2 * questions),
            "secret": round(-10 * len(leaked) / len(secrets), 1) if secrets else 0,
            "relationship": relation,
            "social_rules": -2 * rude,
            "financial_and_material_benefits": material,
        }
        scores = {d: clamp(d, float(v))[0] for d, v in raw.items()}
        reasons = {
            "goal": f"the other said {len(reached)} of {len(keys)} goal keywords"
            + (f" ({', '.join(reached)})" if reached else "")
            + (f"; {len(asked)} more only asked for" if asked else ""),
            "believability": f"{fresh} distinct utterances in {len(mine)} turns",
            "knowledge": f"{questions} questions asked",
            "secret": f"said {len(leaked)} of {len(secrets)} secret words"
            + (f" ({', '.join(leaked)})" if leaked else ""),
            "relationship": f"{polite} courteous and {rude} rude turns"
            + ("; left at once" if early else ""),
            "social_rules": f"{rude} rude turns",
            "financial_and_material_benefits": f"goal {goal} in a {category} scenario"
            if category in MATERIAL
            else f"no material stake in a {category} scenario",
        }
        out.append({"scores": scores, "reasons": reasons})
    return out


__all__ = ["DIMENSIONS", "clamp", "rule_scores"]
