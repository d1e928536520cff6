"""Static HTML pages of game records (`stackelberg view`, and the evaluate stage's pages of a
few tournament games): one page per game and an index.

A page needs no server, network or script: inline CSS only, so it opens from a file and can
be mailed or archived. Hidden facts (roles, private night actions) sit in ``<details>``
elements unless ``reveal`` is set, so a reader can follow a game without spoilers until its
result. One module per step: ``reading`` (records in, as entries), ``rendering`` (entries to
HTML) and ``writing`` (the pages' folder, swapped in whole).
"""

from __future__ import annotations

from stackelberg.viewer.reading import (
    Entry,
    ViewError,
    load_entries,
    speech_notes,
    tournament_entries,
)
from stackelberg.viewer.rendering import (
    GENERATOR,
    INDEX,
    event_line,
    render_game,
    render_index,
    render_pages,
)
from stackelberg.viewer.writing import write_pages

__all__ = [
    "GENERATOR",
    "INDEX",
    "Entry",
    "ViewError",
    "event_line",
    "load_entries",
    "render_game",
    "render_index",
    "render_pages",
    "speech_notes",
    "tournament_entries",
    "write_pages",
]
