"""This project's games and agents in other frameworks' harnesses, each behind its own
optional extra: ``pettingzoo`` (the four games as AEC environments), ``textarena`` (the four
games as TextArena environments, and this project's agents seated in TextArena's own
SecretMafia). ``seat`` is what every framework shares: a seat's text view and its reward.
"""

from __future__ import annotations

import importlib
from types import ModuleType


class MissingExtra(ImportError):
    """An optional package that an integration needs is not installed."""


def require(package: str, extra: str) -> ModuleType:
    """``package`` imported, or a one-line MissingExtra that names the extra installing it."""
    try:
        return importlib.import_module(package)
    except ModuleNotFoundError as exc:
        if exc.name != package:  # the package is there, one of its own imports is not
            raise
        raise MissingExtra(
            f"{package} is not installed; install the extra: pip install -e '.[{extra}]'"
        ) from None


__all__ = ["MissingExtra", "require"]
