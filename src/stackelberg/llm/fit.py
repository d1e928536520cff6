"""Fit a prompt into the context window by dropping the oldest history, never mid-message."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from stackelberg.llm.base import Prompt
from stackelberg.llm.errors import ContextLengthError

T = TypeVar("T")


class TokenCounter(Protocol):
    @property
    def context_window(self) -> int: ...

    def count_tokens(self, text: Prompt) -> int: ...


def fit_history(
    llm: TokenCounter,
    build: Callable[[Sequence[T]], Prompt],
    history: Sequence[T],
    reserve: int = 0,
    limit: int | None = None,
) -> tuple[Prompt, int]:
    """Drop the oldest items of ``history`` until ``build(history[k:])`` fits.

    ``build`` turns the kept history (messages, events, lines: whole items) into a prompt;
    it fits when its tokens plus ``reserve`` (e.g. max_new_tokens) are at most ``limit``
    (default: the model's context window). Returns the prompt and ``k``, the number of items
    dropped. The search is binary, so a long history costs few token counts.
    """
    budget = (llm.context_window if limit is None else limit) - reserve

    def fits(k: int) -> Prompt | None:
        prompt = build(history[k:])
        return prompt if llm.count_tokens(prompt) <= budget else None

    prompt = fits(0)
    if prompt is not None:
        return prompt, 0
    smallest = fits(len(history))
    if smallest is None:
        raise ContextLengthError(
            f"fit_history: the prompt does not fit in {budget} tokens even with all "
            f"{len(history)} history items dropped; shorten its fixed part or lower the reserve"
        )
    lo, hi, best = 1, len(history), smallest  # invariant: dropping hi items fits
    while lo < hi:
        mid = (lo + hi) // 2
        candidate = fits(mid)
        if candidate is None:
            lo = mid + 1
        else:
            hi, best = mid, candidate
    return best, hi
