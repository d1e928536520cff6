"""Reading rendered tables in tests: cells padded to a column's width compare as one space."""

from __future__ import annotations

import re


def squeeze(text: str) -> str:
    """``text`` with every run of spaces made one space."""
    return re.sub(r" {2,}", " ", text)
