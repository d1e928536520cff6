"""Write-then-rename, so a killed run never leaves a half-written output behind: a file
(``atomic_path``, ``atomic_writer``) or a whole folder (``atomic_dir``, ``replace_dir``)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; it replaces ``path`` only if the block succeeds."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike | None, mode: str = "w") -> Iterator[IO | None]:
    """A text file handle whose content appears at ``path`` only on success (None: no file)."""
    if path is None:
        yield None
        return
    with atomic_path(path) as tmp, open(tmp, mode, encoding=None if "b" in mode else "utf-8") as fh:
        yield fh


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a new empty folder beside ``path``; it replaces ``path`` (``replace_dir``)
    only if the block succeeds, and is deleted otherwise."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    recover_dir(target)
    staged = target.with_name(f".{target.name}.new-{uuid.uuid4().hex[:8]}")
    staged.mkdir()  # not mkdtemp: the folder gets the usual permissions, not 0700
    try:
        yield staged
        replace_dir(staged, target)
    except BaseException:
        shutil.rmtree(staged, ignore_errors=True)
        raise


def replace_dir(new: str | os.PathLike, path: str | os.PathLike) -> Path:
    """Put the folder ``new`` (written beside ``path``: the same file system) in place of
    ``path``: the old folder is renamed aside, the new one renamed in, then the old deleted.

    A kill at any moment leaves the old folder or the new one, never neither; a copy left
    aside by a killed replacement is restored or deleted by the next one (``recover_dir``).
    """
    new, target = Path(new), Path(path)
    aside = _aside(target)
    with _replacing(target):
        _recover(target)
        moved = os.path.lexists(target)
        if moved:
            os.rename(target, aside)
        try:
            os.rename(new, target)
        except BaseException:
            if moved:
                os.rename(aside, target)
            raise
        if moved:
            _remove(aside)
    return target


def recover_dir(path: str | os.PathLike) -> None:
    """Finish a replacement of ``path`` that a kill interrupted between its renames: the old
    folder moved aside comes back if no new one took its place, else it is deleted."""
    target = Path(path)
    if os.path.lexists(_aside(target)):
        with _replacing(target):
            _recover(target)


def _aside(target: Path) -> Path:
    return target.with_name(f".{target.name}.replaced")


def _recover(target: Path) -> None:
    aside = _aside(target)
    if not os.path.lexists(aside):
        return
    if os.path.lexists(target):
        _remove(aside)
    else:
        os.rename(aside, target)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


@contextlib.contextmanager
def _replacing(target: Path) -> Iterator[None]:
    """Hold a lock on the folder that holds ``target``: processes replacing the same folder
    swap one at a time, so none takes another's moved-aside copy for a killed one's. Where
    the file system has no locks (some network mounts), the swap goes on unlocked."""
    fd = os.open(target.parent, os.O_RDONLY)
    try:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # and with it the lock
