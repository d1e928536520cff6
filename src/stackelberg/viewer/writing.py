"""Writing the viewer's pages: a folder swapped in whole, replacing only a folder the viewer
wrote before."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from stackelberg.io import atomic_dir
from stackelberg.viewer.reading import ViewError
from stackelberg.viewer.rendering import GENERATOR, INDEX


def write_pages(pages: Mapping[str, str], out: str | os.PathLike) -> Path:
    """Write the pages into folder ``out`` all at once: into a temporary folder beside it,
    renamed into place. An earlier viewer folder there is replaced; any other non-empty
    folder is refused rather than deleted."""
    out = Path(out)
    if out.exists() and not _replaceable(out):
        raise ViewError(f"{out}: exists and was not written by {GENERATOR}; choose another --out")
    with atomic_dir(out) as tmp:
        for name, text in pages.items():
            (tmp / name).write_text(text, encoding="utf-8")
        tmp.chmod(0o755)
    return out


def _replaceable(out: Path) -> bool:
    if not out.is_dir():
        return False
    index = out / INDEX
    if not any(out.iterdir()):
        return True
    return index.is_file() and f'content="{GENERATOR}"' in index.read_text(errors="replace")
