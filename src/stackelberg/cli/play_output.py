"""What `stackelberg play` prints: a game's transcript and result, and the games' summary."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from stackelberg.agents.prompting import transcript_line
from stackelberg.games import Game


def summarize(records: Iterable[dict[str, Any]]) -> str:
    """The games' numbers (``evaluation.play_summary``) as small text tables: wins by team
    and by role dealt (a scored game: its dimensions' means by team), and what the LLM
    seats' answers cost."""
    from tabulate import tabulate

    from stackelberg.evaluation.play_summary import play_summary

    summary = play_summary(records)
    distinct = f" ({summary['scenarios']} distinct scenarios)" if summary["scenarios"] else ""
    parts = [f"{summary['games']} games{distinct}"]
    if "scores" in summary:
        scores = summary["scores"]
        dims = [d for d in next(iter(scores.values()), {}) if d != "unscored"]
        rows = [[team, *(mean_cell(by_dim[d]) for d in dims)] for team, by_dim in scores.items()]
        parts.append(tabulate(rows, ("mean score by seat", *dims), disable_numparse=True))
    else:
        teams = sorted(summary["teams"].items(), key=lambda t: -t[1]["overall"]["wins"])
        rows = [
            (team, won_of(t["overall"]), pct(t["overall"]), reasons(summary["reasons"][team]))
            for team, t in teams
        ]
        headers = ("wins by team", "won/games", "rate", "why")
        parts.append(tabulate(rows, headers, colalign=("left", "right", "right")))
        roles = {role: r for _, t in teams for role, r in t["roles"].items()}  # one team each
        rows = [(role, won_of(roles[role]), pct(roles[role])) for role in sorted(roles)]
        headers = ("wins by role (dealt)", "won/games", "rate")
        parts.append(tabulate(rows, headers, colalign=("left", "right", "right")))
    return "\n\n".join(parts + llm_count_lines(summary))


#: the summary's rows of LLM seat counts: (row, the summary's block of its counts)
LLM_COUNT_ROWS = (("speeches", "speeches"), ("generated choices", "choices"))


def llm_count_lines(summary: dict[str, Any]) -> list[str]:
    """The LLM seats' speeches and generated choices, summed over the games: how many were
    made, the answers asked for and re-asked, and how many fell back (the fallback line, a
    random legal option), with the share of those made; nothing without LLM seats."""
    if not summary["speeches"]:
        return []
    from tabulate import tabulate

    rows = []
    for name, block in LLM_COUNT_ROWS:
        asked, reasked, fell = summary[block].values()  # in CHOICE_COUNTS / SPEECH_COUNTS order
        made = asked - reasked
        rows.append((name, made, asked, reasked, fell, f"{fell / max(made, 1):.1%}"))
    headers = ("LLM seats", "made", "asked", "re-asked", "fell back", "share")
    return [tabulate(rows, headers, colalign=("left", *["right"] * 5))]


def won_of(r: dict[str, Any]) -> str:
    return f"{r['wins']}/{r['n']}"


def pct(r: dict[str, Any]) -> str:
    return f"{r['rate'] or 0:.1%}"


def reasons(counts: dict[str, int]) -> str:
    return ", ".join(f"{reason} {k}" for reason, k in counts.items())


def mean_cell(part: dict[str, Any]) -> str:
    return f"{part['estimate']:.2f}" if part["n"] else "-"


def transcript(game: Game, res: dict[str, Any] | None = None) -> str:
    """The whole game as a narrator sees it; private events are marked, roles revealed last."""
    lines = [f"=== {game.name}, seed {game.seed}, {game.n_players} players ==="]
    last_phase = None
    for ev in game.events:
        header = (ev.phase, ev.round)
        if header != last_phase:
            lines.append(f"--- {ev.phase} {ev.round} ---")
            last_phase = header
        if text := transcript_line(game, ev):
            lines.append(text)
    return "\n".join(lines + result_lines(game, res))


def result_lines(game: Game, res: dict[str, Any] | None = None) -> list[str]:
    """Who won, and every player's role (ONUW: and the card held at the end, if moved);
    a scored game's dimensions (``res``: a result rescored by the LLM evaluator)."""
    res = res or game.result()
    final = res.get("final_roles")
    lines = [f"=== result: {res['winner']} wins ({res['reason']}) ==="]
    for p in game.players:
        moved = f", ends as {final[p.id]}" if final and final[p.id] != p.role else ""
        won = "  *won*" if p.id in res["winners"] else ""
        lines.append(f"  {p.name}: {p.role} ({p.team}{moved}){won}")
        part = (res.get("scores") or [{}] * game.n_players)[p.id] or {}
        for dim, value in (part.get("scores") or {}).items():
            why = (part.get("reasons") or {}).get(dim, "")
            lines.append(f"    {dim}: {value:g}" + (f" ({why})" if why else ""))
    return lines
