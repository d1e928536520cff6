"""The viewer's HTML: a self-contained page per game (seats, events by phase, result) and an
index, with inline CSS. Every text taken from a record is escaped, since speeches are model
output; hidden facts sit in ``<details>`` elements unless ``reveal`` is set."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from stackelberg.agents.prompting import transcript_line
from stackelberg.agents.prompts import describe_event
from stackelberg.games import Game, GameError
from stackelberg.games.base import Event, player_name
from stackelberg.persuasion.context import restore
from stackelberg.viewer.reading import Entry, ViewError

#: marks a folder as written by the viewer, so that writing again may replace it
GENERATOR = "stackelberg view"
INDEX = "index.html"

CSS = """
:root { color-scheme: light; --ink: #1f2328; --muted: #656d76; --line: #d0d7de; }
* { box-sizing: border-box; }
body { margin: 0; background: #f6f8fa; color: var(--ink);
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
main { max-width: 920px; margin: 0 auto; padding: 24px 20px 48px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 28px 0 10px; border-bottom: 1px solid var(--line); }
h3 { font-size: 13px; margin: 18px 0 8px; color: var(--muted); text-transform: uppercase;
  letter-spacing: .06em; }
.sub, .muted { color: var(--muted); }
a { color: #0969da; }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid var(--line);
  vertical-align: top; }
th { background: #eef1f4; font-size: 13px; }
.seat { color: hsl(var(--hue) 60% 32%); font-weight: 600; }
.dot { display: inline-block; width: 10px; height: 10px; border-radius: 50%;
  background: hsl(var(--hue) 60% 50%); margin-right: 6px; }
details > summary { cursor: pointer; color: var(--muted); }
.bubble { background: hsl(var(--hue) 70% 96%); border: 1px solid hsl(var(--hue) 40% 82%);
  border-left: 5px solid hsl(var(--hue) 60% 50%); border-radius: 10px; padding: 8px 12px;
  margin: 8px 0; max-width: 760px; }
.bubble .who { font-size: 13px; margin-bottom: 2px; }
.bubble .agent { color: var(--muted); font-weight: 400; margin-left: 6px; }
.bubble p { margin: 0; white-space: pre-wrap; overflow-wrap: anywhere; }
.base { font-size: 13px; color: var(--muted); border-left: 2px solid var(--line);
  padding-left: 8px; margin: 4px 0 6px; }
.label { font-size: 11px; text-transform: uppercase; letter-spacing: .05em;
  color: var(--muted); margin-right: 6px; }
.notes { font-size: 13px; margin-top: 6px; padding-top: 6px;
  border-top: 1px dashed hsl(var(--hue) 40% 82%); }
.notes ul { margin: 2px 0 4px 18px; padding: 0; }
.event { font-size: 13px; color: #424a53; margin: 3px 0 3px 4px; }
.private { color: #6e4a00; }
.private summary { color: #9a6700; }
.result { background: #fff; border: 1px solid var(--line); border-radius: 10px;
  padding: 12px 16px; }
.won { color: #1a7f37; font-weight: 600; }
.options { font-size: 12px; color: var(--muted); margin: 2px 0 0; }
"""


def _page(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="generator" content="{GENERATOR}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{CSS}</style></head>"
        f"<body><main>\n{body}\n</main></body></html>\n"
    )


def _words(name: str) -> str:
    return escape(name.replace("_", " "))


def _hue(player: int) -> int:
    """A colour per seat, far apart for neighbouring seats."""
    return int(player) * 137 % 360  # a number, whatever the record holds


def _seat(player: dict[str, Any]) -> str:
    return (
        f'<span class="seat" style="--hue:{_hue(player["id"])}"><span class="dot"></span>'
        f"{escape(player['name'])}</span>"
    )


def _agent(player: dict[str, Any]) -> str:
    model = player.get("model")
    return escape(player["agent"] + (f" · {model}" if model else ""))


def _hidden(text: str, reveal: bool, summary: str) -> str:
    """Text shown as is with ``reveal``, else folded behind a summary the reader opens."""
    return text if reveal else f"<details><summary>{summary}</summary>{text}</details>"


def _game_title(record: dict[str, Any]) -> str:
    return f"{record['game']} · seed {record['seed']}"


def _seats(record: dict[str, Any], reveal: bool) -> str:
    rows = []
    for p in record["players"]:
        role = f"{_words(p['role'])} <span class='muted'>(team {_words(p['team'])})</span>"
        rows.append(
            f"<tr><td>{_seat(p)}</td><td>{_agent(p)}</td>"
            f"<td>{_hidden(role, reveal, 'show role')}</td></tr>"
        )
    return (
        "<h2>Seats</h2><table><tr><th>player</th><th>agent</th><th>role</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def _speech(record: dict[str, Any], index: int, ev: Event, note: Mapping[str, Any] | None) -> str:
    player = record["players"][ev.player]
    text = ev.data["text"]
    base = ev.data.get("base_utterance")
    planned = (
        f'<div class="base"><span class="label">before the Refiner</span>{escape(base)}</div>'
        if base is not None
        else ""
    )
    said = '<span class="label">refined</span>' if base is not None else ""
    return (
        f'<div class="bubble" id="e{index}" style="--hue:{_hue(ev.player)}">'
        f'<div class="who"><span class="seat">{escape(player["name"])}</span>'
        f'<span class="agent">{_agent(player)}</span></div>'
        f"{planned}<p>{said}{escape(text)}</p>{_notes(note, text)}</div>"
    )


def _notes(note: Mapping[str, Any] | None, text: str) -> str:
    """The pipeline's intents and base reward for this speech, if they are about it."""
    if not note or note.get("utterance") != text:
        return ""
    parts = []
    if "reward" in note:
        parts.append(
            f"<div><span class='label'>Measurer reward</span>{note['reward']:+.3f} "
            f"<span class='muted'>(desired {note['positive']:+.3f}, "
            f"undesired {note['negative']:+.3f})</span></div>"
        )
    if "desired" in note:
        follower = escape(player_name(note["follower"]))

        def items(responses: Sequence[str]) -> str:
            return "".join(f"<li>{escape(r)}</li>" for r in responses)

        by = f" (labeler: {escape(note['labeler'])})" if note.get("labeler") else ""
        parts.append(
            f"<details><summary>what the speaker wants from {follower}: "
            f"{len(note['desired'])} desired, {len(note['undesired'])} undesired responses{by}"
            f"</summary><span class='label'>desired</span><ul>{items(note['desired'])}</ul>"
            f"<span class='label'>undesired</span><ul>{items(note['undesired'])}</ul></details>"
        )
    return f'<div class="notes">{"".join(parts)}</div>'


def event_line(game: Game, ev: Event) -> str | None:
    """The game master's line for a non-speech event (``transcript_line``: a player's
    reasoning too); a private action the narrator leaves out is told as its actor saw it,
    marked with who saw it."""
    text = transcript_line(game, ev)
    if text is None and ev.visible_to != "all" and ev.visible_to:
        witness = ev.player if ev.player in ev.visible_to else ev.visible_to[0]
        if seen := describe_event(game, ev, witness):
            who = ", ".join(player_name(p) for p in ev.visible_to)
            text = f"({who} only) {seen}"
    return text


def _event(game: Game, ev: Event, reveal: bool) -> str:
    text = event_line(game, ev)
    if text is None:
        return ""
    if ev.visible_to == "all":
        return f'<div class="event">{escape(text)}</div>'
    # the event's type or its witnesses would give roles away: the summary names neither
    seen = len(ev.visible_to)
    summary = f"private event, seen by {seen} player{'s' if seen > 1 else ''}"
    return f'<div class="event private">{_hidden(escape(text), reveal, summary)}</div>'


def _phase_title(phase: str, round_: int) -> str:
    return _words(phase).capitalize() + (f" {round_}" if round_ else "")


def _events(entry: Entry, game: Game, reveal: bool, notes: Mapping[str, Mapping[str, Any]]) -> str:
    record = entry.record
    out, header = ["<h2>The game</h2>"], None
    for index, ev in enumerate(game.events):
        if ev.type == "speech":
            note = notes.get(f"{record['game']}-{record['seed']}-{index}")
            line = _speech(record, index, ev, note)
        else:
            line = _event(game, ev, reveal)
        if not line:
            continue
        if (ev.phase, ev.round) != header:
            header = (ev.phase, ev.round)
            out.append(f"<h3>{_phase_title(ev.phase, ev.round)}</h3>")
        out.append(line)
    return "\n".join(out)


def _result(record: dict[str, Any]) -> str:
    res = record["result"]
    winners = set(res["winners"])
    final = res.get("final_roles")
    # ONUW: the team of the card dealt; who won follows the card held at the end
    head = f"<th>player</th><th>role dealt</th><th>team{' dealt' if final else ''}</th>"
    head += "<th>card at the end</th>" if final else ""
    rows = []
    for p in record["players"]:
        end = f"<td>{_words(final[p['id']])}</td>" if final else ""
        won = "<span class='won'>won</span>" if p["id"] in winners else ""
        rows.append(
            f"<tr><td>{_seat(p)}</td><td>{_words(p['role'])}</td>"
            f"<td>{_words(p['team'])}</td>{end}<td>{won}</td></tr>"
        )
    return (
        '<h2>Result</h2><div class="result">'
        f"<p><b>{_words(res['winner'])}</b> wins "
        f"<span class='muted'>({_words(res['reason'])})</span></p>"
        f"<table><tr>{head}<th></th></tr>{''.join(rows)}</table></div>"
    )


def render_game(
    entry: Entry, reveal: bool = False, notes: Mapping[str, Mapping[str, Any]] | None = None
) -> str:
    """One game as a self-contained HTML page: seats, events by phase, result."""
    record = entry.record
    game = restore(entry.source)
    options = _options(record.get("config") or {})
    body = [
        f'<p class="sub"><a href="{INDEX}">all games</a></p>',
        f"<h1>{escape(_game_title(record))}</h1>",
        f'<p class="sub">{len(record["players"])} players'
        + (f" · {escape(entry.label)}" if entry.label else "")
        + "</p>",
        f'<p class="options">options: {escape(options)}</p>' if options else "",
        _seats(record, reveal),
        _events(entry, game, reveal, notes or {}),
        _result(record),
    ]
    return _page(_game_title(record), "\n".join(body))


def _options(config: Mapping[str, Any]) -> str:
    """The game's options as a reader would write them (lists comma-separated)."""

    def value(v: Any) -> str:
        return ", ".join(map(str, v)) if isinstance(v, list) else str(v)

    return " · ".join(f"{k} {value(v)}" for k, v in sorted(config.items()) if v is not None)


def _agents_summary(record: dict[str, Any]) -> str:
    kinds = Counter(p["agent"] for p in record["players"])
    models = sorted({p["model"] for p in record["players"] if p.get("model")})
    text = ", ".join(f"{kind} ×{n}" for kind, n in kinds.items())
    return text + (f" ({', '.join(models)})" if models else "")


def render_index(pages: Sequence[tuple[str, Entry]], source: str) -> str:
    """The table of games, each row linking its page."""
    rows = []
    for filename, entry in pages:
        rec = entry.record
        rows.append(
            f"<tr><td><a href='{escape(filename)}'>{escape(rec['game'])}</a></td>"
            f"<td>{escape(str(rec['seed']))}</td>"
            f"<td>{_words(rec['result']['winner'])}</td>"
            f"<td class='muted'>{_words(rec['result']['reason'])}</td>"
            f"<td>{escape(_agents_summary(rec))}</td><td>{escape(entry.label)}</td></tr>"
        )
    body = (
        f"<h1>{len(pages)} games</h1><p class='sub'>from {escape(source)}</p>"
        "<table><tr><th>game</th><th>seed</th><th>winner</th><th>why</th><th>agents</th>"
        f"<th></th></tr>{''.join(rows)}</table>"
    )
    return _page(f"{len(pages)} games", body)


def render_pages(
    entries: Sequence[Entry],
    source: str,
    reveal: bool = False,
    notes: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, str]:
    """File name -> HTML of every game and the index (names unique even for repeated seeds,
    as in tournaments, where conditions share seeds)."""
    pages: dict[str, str] = {}
    linked: list[tuple[str, Entry]] = []
    taken: Counter[str] = Counter()
    for number, entry in enumerate(entries, 1):
        taken[entry.name] += 1
        suffix = f"-{taken[entry.name]}" if taken[entry.name] > 1 else ""
        filename = f"{entry.name}{suffix}.html"
        try:
            pages[filename] = render_game(entry, reveal, notes)
        except (KeyError, IndexError, TypeError, ValueError, GameError) as err:
            raise ViewError(
                f"{source}: game {number} ({entry.name}) is not a valid record "
                f"({type(err).__name__}: {err})"
            ) from None
        linked.append((filename, entry))
    pages[INDEX] = render_index(linked, source)
    return pages
