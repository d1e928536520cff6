"""The llm interface: request types, and the ``Backend`` base that caches and batches.

A backend implements two primitives, ``_generate`` (many prompts in one batched call) and
``_score_nested`` (log-probabilities after a shared context, two levels deep), may override
``_score_many`` (many prefixes, each with its own continuations, in one call), plus
``render_chat``, ``count_tokens`` and ``context_window``. The base class adds what every
backend shares: the response cache, the grouping of ``run_batch`` requests into batched
calls, and the public ``generate``/``score``/``score_nested`` methods.

Prompts are either raw text (continued as is) or chat messages ``[{"role", "content"}]``
(rendered with the model's chat template and an assistant turn opened).

Tokenisation of scored text: the pieces (context, candidate, joiner, response; or prefix and
continuation) are tokenised as the whole text they make, and cut where its tokens fall
(``llm.pieces``), so a follower is scored on the tokens a player's text really has. Every
backend uses this same rule, so the scores of the fast paths equal a plain forward pass of
the whole text.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import KW_ONLY, dataclass, field, fields
from typing import Any, ClassVar

from stackelberg.llm.cache import ResponseCache, cache_key
from stackelberg.llm.pieces import TOKENIZATION

Message = dict[str, str]
Prompt = str | list[Message]


@dataclass(frozen=True, kw_only=True)
class SamplingParams:
    """How one request samples; a batched call may mix requests with different settings.

    Keyword-only, so that ``GenerateRequest`` can add its positional ``prompt`` first.
    """

    temperature: float = 0.7
    top_p: float = 0.9
    max_new_tokens: int = 64
    stop: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "stop", tuple(self.stop))  # a list or one string is accepted


@dataclass(frozen=True)
class GenerateRequest(SamplingParams):
    """Sample ``n`` completions of ``prompt``; the result is a list of ``n`` strings.

    Only ``prompt`` is positional; the rest, sampling settings included, go by keyword.
    """

    prompt: Prompt
    _: KW_ONLY
    n: int = 1
    seed: int = 0

    @property
    def sampling(self) -> SamplingParams:
        """The request's sampling settings alone."""
        return SamplingParams(**{f.name: getattr(self, f.name) for f in fields(SamplingParams)})


@dataclass(frozen=True)
class ScoreRequest:
    """Per-token log-probabilities of each continuation after ``prefix``: list[list[float]]."""

    prefix: Prompt
    continuations: list[str] = field(default_factory=list)


Request = GenerateRequest | ScoreRequest


def plain_chat(messages: Sequence[Message], add_generation_prompt: bool = True) -> str:
    """A template-free rendering, for models without a chat template and for token estimates."""
    text = "".join(f"{m['role']}: {m['content']}\n" for m in messages)
    return text + ("assistant:" if add_generation_prompt else "")


#: Characters per token of the upper estimate used where no tokenizer is at hand.
CHARS_PER_TOKEN = 3


def estimate_tokens(text: str) -> int:
    """An upper estimate of a text's tokens, so that prompts fitted with it do fit."""
    return len(text) // CHARS_PER_TOKEN + 1


def _check_messages(prompt: Prompt) -> None:
    if isinstance(prompt, str):
        return
    for m in prompt:
        if not isinstance(m, dict) or "role" not in m or "content" not in m:
            raise TypeError(f"chat messages must be dicts with 'role' and 'content', got {m!r}")


class Backend(ABC):
    """One model behind one interface; subclasses implement the underscored primitives."""

    #: Backend kind as named in ``LLMConfig.backend``.
    name: ClassVar[str] = "backend"
    #: Whether ``score`` works (log-probabilities of a prompt); ``make_llm`` sets it from
    #: the config, since one protocol (OpenAI's) is served both with and without them.
    can_score: bool = True
    #: The random stream a sampled generation (temperature above 0) draws from, in its cache
    #: key: answers drawn from an earlier stream are not this one's (None: the server's own)
    sampler: ClassVar[str | None] = None

    def __init__(self, model: str, cache: ResponseCache | None = None) -> None:
        self.model = model
        self.cache = cache

    # ---- what a backend implements -------------------------------------------------------

    @property
    @abstractmethod
    def context_window(self) -> int:
        """Tokens the model can attend to (prompt + generated)."""

    @abstractmethod
    def count_tokens(self, text: Prompt) -> int:
        """Tokens of a prompt as the model will see it (chat messages are rendered first)."""

    @abstractmethod
    def render_chat(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> str:
        """Chat messages as the text the model reads."""

    @abstractmethod
    def _generate(
        self,
        prompts: list[Prompt],
        ns: list[int],
        seeds: list[int],
        params: list[SamplingParams],
    ) -> Iterator[tuple[int, list[str]]]:
        """Yield ``(index, samples)`` per prompt as each finishes (the order is free);
        ``params[i]`` are prompt i's sampling settings."""

    @abstractmethod
    def _score_nested(
        self, context: Prompt, candidates: list[str], responses: list[str], joiner: str
    ) -> Iterator[tuple[int, int, list[float]]]:
        """Yield ``(candidate, response, logprobs)`` for every pair (the order is free)."""

    def _score_many(
        self, prefixes: list[Prompt], continuations: list[list[str]]
    ) -> list[list[list[float]]]:
        """Log-probabilities of ``continuations[i]`` after ``prefixes[i]``, for every i.

        One prefix at a time here; a backend that can put many prefixes in one call
        overrides this."""
        out = []
        for prefix, conts in zip(prefixes, continuations, strict=True):
            row: list[list[float]] = [[] for _ in conts]
            for _, r, logprobs in self._score_nested(prefix, [""], list(conts), ""):
                row[r] = logprobs
            out.append(row)
        return out

    def clear_prefix_cache(self) -> None:
        """Forget computed prompt prefixes kept for reuse (a memory release; none here)."""
        return None

    def close(self) -> None:
        """Release connections, threads and the cache file."""
        if self.cache is not None:
            self.cache.close()

    # ---- the public interface ------------------------------------------------------------

    def _key(self, kind: str, **payload: Any) -> str:
        return cache_key({"backend": self.name, "model": self.model, "kind": kind, **payload})

    def _cached_or_computed(
        self, keys: list[str], compute: Callable[[list[int]], Iterable[tuple[int, Any]]]
    ) -> list[Any]:
        """The cached answer of each key; ``compute(missing)`` yields ``(index, answer)`` for
        (at least) the missing indices, and each answer is stored as it comes (the cached
        answer stays cached; a fresh one still wins in the result)."""
        found = self.cache.get_many(keys) if self.cache is not None else {}
        out = [found.get(k) for k in keys]
        missing = [i for i, v in enumerate(out) if v is None]
        if missing:
            for i, answer in compute(missing):
                if out[i] is None and self.cache is not None:
                    self.cache.put(keys[i], answer)
                out[i] = answer
        return out

    def generate(
        self,
        prompts: Sequence[Prompt],
        n: int = 1,
        temperature: float = 0.7,
        top_p: float = 0.9,
        max_new_tokens: int = 64,
        stop: Sequence[str] = (),
        seed: int | Sequence[int] = 0,
    ) -> list[list[str]]:
        """``n`` samples per prompt, all prompts in one batched call; cached by prompt and seed."""
        seeds = [seed] * len(prompts) if isinstance(seed, int) else list(seed)
        if len(seeds) != len(prompts):
            raise ValueError(f"generate: {len(seeds)} seeds for {len(prompts)} prompts")
        params = SamplingParams(
            temperature=temperature, top_p=top_p, max_new_tokens=max_new_tokens, stop=stop
        )
        return self._generate_cached(
            list(prompts), [n] * len(prompts), seeds, [params] * len(seeds)
        )

    def _generate_cached(
        self, prompts: list[Prompt], ns: list[int], seeds: list[int], params: list[SamplingParams]
    ) -> list[list[str]]:
        for p in prompts:
            _check_messages(p)
        if any(x.max_new_tokens < 1 for x in params) or any(n < 1 for n in ns):
            raise ValueError("generate: n and max_new_tokens must be at least 1")
        keys = [
            self._key(
                "generate",
                prompt=p,
                n=n,
                seed=s,
                temperature=x.temperature,
                top_p=x.top_p,
                max_new_tokens=x.max_new_tokens,
                stop=list(x.stop),
                **({"sampler": self.sampler} if self.sampler and x.temperature > 0 else {}),
            )
            for p, n, s, x in zip(prompts, ns, seeds, params, strict=True)
        ]

        def compute(todo: list[int]) -> Iterator[tuple[int, list[str]]]:
            outputs = self._generate(
                [prompts[i] for i in todo],
                [ns[i] for i in todo],
                [seeds[i] for i in todo],
                [params[i] for i in todo],
            )
            return ((todo[j], samples) for j, samples in outputs)

        return self._cached_or_computed(keys, compute)

    def _score_cached(
        self, prefixes: list[Prompt], continuations: list[list[str]]
    ) -> list[list[list[float]]]:
        """``_score_many`` for what the cache lacks (keys as ``score`` makes them)."""
        for p in prefixes:
            _check_messages(p)
        pairs = [(i, k) for i, cs in enumerate(continuations) for k in range(len(cs))]
        keys = [
            self._key("score", pieces=[prefixes[i], continuations[i][k]], tokens=TOKENIZATION)
            for i, k in pairs
        ]

        def compute(todo: list[int]) -> Iterator[tuple[int, list[float]]]:
            by_prefix: dict[int, list[int]] = {}  # prefix -> its missing pairs
            for f in todo:
                by_prefix.setdefault(pairs[f][0], []).append(f)
            scored = self._score_many(
                [prefixes[i] for i in by_prefix],
                [[continuations[i][pairs[f][1]] for f in fs] for i, fs in by_prefix.items()],
            )
            for fs, row in zip(by_prefix.values(), scored, strict=True):
                yield from zip(fs, row, strict=True)

        flat = iter(self._cached_or_computed(keys, compute))
        return [[next(flat) for _ in cs] for cs in continuations]

    def score(self, prefix: Prompt, continuations: Sequence[str]) -> list[list[float]]:
        """Per-token log-probabilities of each continuation after one shared prefix."""
        return self.score_nested(prefix, [""], list(continuations))[0]

    def score_nested(
        self,
        context: Prompt,
        candidates: Sequence[str],
        responses: Sequence[str],
        joiner: str = "",
    ) -> list[list[list[float]]]:
        """Log-probabilities of each response after context + candidate + joiner, per candidate.

        The Measurer's shape: one context, n candidates, the same responses after each; a
        backend computes the context once and each candidate once. Result ``[c][r]`` holds
        one log-probability per token of ``responses[r]``.
        """
        _check_messages(context)
        candidates, responses = list(candidates), list(responses)
        width = len(responses)  # pair (c, r) is flat index c * width + r
        keys = [
            self._key(
                "score",
                pieces=[context, *(p for p in (cand, joiner) if p), resp],
                tokens=TOKENIZATION,
            )
            for cand in candidates
            for resp in responses
        ]

        def compute(todo: list[int]) -> Iterator[tuple[int, list[float]]]:
            # Every missing response after every candidate that misses one (a superset).
            todo_c = sorted({f // width for f in todo})
            todo_r = sorted({f % width for f in todo})
            pairs = self._score_nested(
                context, [candidates[c] for c in todo_c], [responses[r] for r in todo_r], joiner
            )
            for ci, ri, logprobs in pairs:
                yield todo_c[ci] * width + todo_r[ri], logprobs

        flat = self._cached_or_computed(keys, compute)
        return [flat[c * width : (c + 1) * width] for c in range(len(candidates))]

    def run_batch(self, requests: Sequence[Request]) -> list[Any]:
        """Answer a mixed list of requests, in order, batching what can share a call.

        All generate requests go in one ``_generate`` call (prompts, n, seed and sampling
        settings may differ); all score requests go in one ``_score_many`` call, those with
        the same prefix as one entry. Cached answers are served from the cache.
        """
        results: list[Any] = [None] * len(requests)
        gen: list[int] = []
        score_groups: dict[str, list[int]] = {}
        for i, req in enumerate(requests):
            if isinstance(req, GenerateRequest):
                gen.append(i)
            elif isinstance(req, ScoreRequest):
                score_groups.setdefault(json.dumps(req.prefix, sort_keys=True), []).append(i)
            else:
                raise TypeError(f"run_batch: not an LLM request: {req!r}")
        if gen:
            reqs = [requests[i] for i in gen]
            outs = self._generate_cached(
                [r.prompt for r in reqs],
                [r.n for r in reqs],
                [r.seed for r in reqs],
                [r.sampling for r in reqs],
            )
            for i, o in zip(gen, outs, strict=True):
                results[i] = o
        if score_groups:
            groups = list(score_groups.values())
            conts = [
                list(dict.fromkeys(c for i in idx for c in requests[i].continuations))
                for idx in groups
            ]
            scored = self._score_cached([requests[idx[0]].prefix for idx in groups], conts)
            for idx, cs, row in zip(groups, conts, scored, strict=True):
                by_text = dict(zip(cs, row, strict=True))
                for i in idx:
                    results[i] = [by_text[c] for c in requests[i].continuations]
        return results

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
