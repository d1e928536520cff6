"""The report's table model, the formats of its cells, and its markdown and text renderings."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TextTable:
    """A titled table of strings; ``note`` is printed under it."""

    title: str
    headers: list[str]
    rows: list[list[str]]
    note: str = ""
    align_left: int = 1  # leading columns aligned left (labels); the rest right


def pct(x: float | None) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f}%"


def rate_cell(r: Mapping[str, Any] | None) -> str:
    """``"44.7% [35.1, 54.6] n=64"`` for a rate dict of metrics.json."""
    if not r or not r["n"]:
        return "-"
    lo, hi = r["ci"]
    return f"{pct(r['rate'])} [{100 * lo:.1f}, {100 * hi:.1f}] n={r['n']}"


def diff_cell(estimate: float, ci: Sequence[float], scale: float = 100.0, digits: int = 1) -> str:
    """A signed difference with its interval, e.g. ``"+4.7 [-6.0, 16.0]"``."""
    a, lo, hi = (scale * x for x in (estimate, *ci))
    return f"{a:+.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def _tabulate(table: TextTable, tablefmt: str) -> str:
    from tabulate import tabulate

    align = ["left" if i < table.align_left else "right" for i in range(len(table.headers))]
    return tabulate(
        table.rows, table.headers, tablefmt=tablefmt, colalign=align, disable_numparse=True
    )


def render_markdown(table: TextTable) -> str:
    text = f"### {table.title}\n\n{_tabulate(table, 'pipe')}"
    return f"{text}\n\n{table.note}" if table.note else text


def render_text(table: TextTable) -> str:
    lines = [table.title, _tabulate(table, "simple")]
    return "\n".join(lines + ([table.note] if table.note else []))


def mean_cell(part: Mapping[str, Any]) -> str:
    """``"0.412 [0.300, 0.520] n=55"``: a mean reward with its bootstrap interval and n."""
    lo, hi = part["ci"]
    return f"{part['estimate']:.3f} [{lo:.3f}, {hi:.3f}] n={part['n']}"


def interval_cell(part: Mapping[str, Any] | None, percent: bool = False) -> str:
    """``"-1.234 [-1.5, -0.9]"`` (``percent``: ``"42% [18, 66]"``) for an interval dict of
    metrics.json, without its n; "-" where nothing was measured."""
    if not part or not part.get("n") or part["estimate"] is None:
        return "-"
    lo, hi = part["ci"]
    if percent:
        return f"{100 * part['estimate']:.0f}% [{100 * lo:.0f}, {100 * hi:.0f}]"
    return f"{part['estimate']:.3f} [{lo:.3f}, {hi:.3f}]"


def mean_cell_or_dash(part: Mapping[str, Any] | None) -> str:
    """``mean_cell``, or "-" where nothing was measured."""
    return mean_cell(part) if part and part.get("n") else "-"
