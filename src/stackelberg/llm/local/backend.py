"""``LocalBackend``: the Backend interface over a model in this process (text <-> token ids).

It turns prompts into token ids, checks them against the context window and hands the ids to
the decode and scoring modules; the prefix store lives as long as the backend.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from stackelberg.llm.base import Backend, Message, Prompt, SamplingParams, plain_chat
from stackelberg.llm.cache import ResponseCache
from stackelberg.llm.embedded import EMBEDDED_MODELS, EMBEDDED_NAME, ensure_checkpoint
from stackelberg.llm.errors import ConfigError, ContextLengthError
from stackelberg.llm.local import decode, sampling, scoring
from stackelberg.llm.local.hf_internals import allow_grouped_kv_attention
from stackelberg.llm.local.loading import (
    adapter_digest,
    bound_onednn_cache,
    checkpoint_digest,
    load_model,
    lora_beside,
    plain_lora,
    weights_dtype,
)
from stackelberg.llm.local.model import LocalModel
from stackelberg.llm.local.prefill import (
    BLOCK_TOKENS,
    PROCESS_BUDGET,
    Prefiller,
    PrefixStore,
    auto_prefix_cache_mb,
)
from stackelberg.llm.local.threads import pace, set_threads
from stackelberg.llm.pieces import NestedTokens, nested_tokens


@dataclass
class _Weights:
    """A loaded checkpoint and the prefix store of its keys and values (they depend on the
    weights only), shared by every backend that runs the same weights."""

    tokenizer: Any
    lm: Any
    net: LocalModel
    prefiller: Prefiller
    #: the weights an adapter runs beside (kept alive while the adapter's are)
    base: _Weights | None = None

    @property
    def prefix_store(self) -> PrefixStore:
        return self.prefiller.store


#: loaded weights by (checkpoint, dtype, adapter digest, device); alive while a backend uses them
_LOADED: weakref.WeakValueDictionary[tuple, _Weights] = weakref.WeakValueDictionary()


def _weights(
    path: str, name: str, model: str, dtype: str, device: torch.device, adapter: str | None
):
    """The loaded weights of a checkpoint (``name``: its weights' name, e.g. a digest), with
    a plain LoRA adapter beside the base's shared weights (its other adapters merged in at
    load)."""
    key = (name, dtype, adapter_digest(adapter) if adapter else None, str(device))
    if (loaded := _LOADED.get(key)) is None:
        base = None
        if adapter and plain_lora(adapter):
            base = _weights(path, name, model, dtype, device, None)
            tokenizer, lm = base.tokenizer, lora_beside(base.lm, adapter)
        else:
            tokenizer, lm = load_model(path, model, dtype, device, adapter)
        net = LocalModel(tokenizer, lm, device)
        store = PrefixStore(block=BLOCK_TOKENS, budget=PROCESS_BUDGET)
        loaded = _Weights(tokenizer, lm, net, Prefiller(net, store), base)
        _LOADED[key] = loaded
    return loaded


class LocalBackend(Backend):
    """A causal LM loaded with transformers; ``model="embedded"`` is the built-in SmolLM2
    (``llm.embedded.EMBEDDED_MODELS``: the others built in).

    Backends of one process that run the same weights (e.g. the labeler, and the Measurer
    with its own context window) share one loaded copy and its prefix store; all prefix
    stores share one memory budget (``prefix_cache_mb``, the largest asked for).
    """

    name = "local"
    sampler = sampling.STREAM

    def __init__(
        self,
        model: str = EMBEDDED_NAME,
        device: str = "auto",
        dtype: str = "auto",
        batch_size: int = 32,
        context_window: int | None = None,
        cache: ResponseCache | None = None,
        threads: int | None = None,
        adapter: str | None = None,
        prefix_cache_mb: int | None = None,
        chat_template: bool = True,
    ) -> None:
        embedded = EMBEDDED_MODELS.get(model)
        path = str(ensure_checkpoint(model)) if embedded else model
        resolved = torch.device(
            ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
        )
        if resolved.type == "cuda" and not torch.cuda.is_available():
            raise ConfigError(f"local backend: device {device!r}, but this machine has no CUDA GPU")
        dtype = weights_dtype(dtype, resolved)
        # The cache key names the weights: the embedded file, or a checkpoint folder's content
        # (not its path: other weights written there are other answers); with a LoRA adapter
        # it also names the adapter's weights, so each training run is its own.
        weights = f"embedded:{embedded.gguf_file}" if embedded else model
        if Path(path).is_dir():
            weights += f"@{checkpoint_digest(path)}"
        name = weights
        if adapter:
            name += f"+lora:{adapter_digest(adapter)}"
        if dtype != "float32":
            name += f"+{dtype}"  # its answers are its own in the response cache
        if not chat_template:
            name += "+plain_chat"  # so are those of its plain 'role: content' prompts
        super().__init__(name, cache)
        self.chat_template = chat_template
        self.device = resolved
        #: torch threads of its forward passes (``threads.thread_count``; None on a GPU)
        self.threads: int | None = None
        if self.device.type == "cpu":
            self.threads = set_threads(threads)
            allow_grouped_kv_attention()
            bound_onednn_cache()
        mb = auto_prefix_cache_mb() if prefix_cache_mb is None else prefix_cache_mb
        PROCESS_BUDGET.max_bytes = max(PROCESS_BUDGET.max_bytes, mb * 2**20)
        self._weights = _weights(path, weights, model, dtype, self.device, adapter)
        self.tokenizer, self.lm = self._weights.tokenizer, self._weights.lm
        self.net = self._weights.net
        self.prefiller = self._weights.prefiller
        self.prefix_store = self.prefiller.store
        self.batch_size = batch_size
        self._context_window = context_window or int(
            getattr(self.lm.config, "max_position_embeddings", 2048)
        )

    # ---- text and tokens ------------------------------------------------------------------

    @property
    def context_window(self) -> int:
        return self._context_window

    def render_chat(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> str:
        if not (self.chat_template and self.tokenizer.chat_template):
            return plain_chat(messages, add_generation_prompt)
        return self.tokenizer.apply_chat_template(
            list(messages), tokenize=False, add_generation_prompt=add_generation_prompt
        )

    def _adds_bos(self, text: str) -> bool:
        """Whether a first piece gets the tokenizer's special tokens: once, so not when the
        text (a rendered chat) already starts with BOS."""
        bos = self.tokenizer.bos_token
        return not (bos and text.startswith(bos))

    def encode(self, text: str, first: bool = True) -> list[int]:
        """Token ids of one piece; only the first piece gets special tokens (BOS), once."""
        return self.tokenizer(text, add_special_tokens=first and self._adds_bos(text))["input_ids"]

    def prompt_ids(self, prompt: Prompt) -> list[int]:
        text = prompt if isinstance(prompt, str) else self.render_chat(prompt)
        return self.encode(text, first=True)

    def count_tokens(self, text: Prompt) -> int:
        return len(self.prompt_ids(text))

    def _check_length(self, n_tokens: int, what: str) -> None:
        if n_tokens > self.context_window:
            raise ContextLengthError(
                f"local backend: {what} needs {n_tokens} tokens but {self.model} has a context "
                f"window of {self.context_window}; shorten the prompt (see llm.fit_history)"
            )

    def clear_prefix_cache(self) -> None:
        self.prefix_store.clear()

    # ---- generation ---------------------------------------------------------------------------

    @torch.inference_mode()
    def _generate(
        self,
        prompts: list[Prompt],
        ns: list[int],
        seeds: list[int],
        params: list[SamplingParams],
    ) -> Iterator[tuple[int, list[str]]]:
        ids = [self.prompt_ids(p) for p in prompts]
        for i, x in zip(ids, params, strict=True):
            self._check_length(len(i) + x.max_new_tokens, "prompt + max_new_tokens")
        pace(self.threads)
        yield from decode.generate(self.prefiller, ids, ns, seeds, params, self.batch_size)

    # ---- scoring --------------------------------------------------------------------------------

    def _tokenize_whole(self, texts: list[str]) -> list[list[int]]:
        """Token ids of whole texts that share a start, each tokenized as a first piece."""
        return self.tokenizer(texts, add_special_tokens=self._adds_bos(texts[0]))["input_ids"]

    def nested_tokens(
        self, context: Prompt, candidates: list[str], responses: list[str], joiner: str = ""
    ) -> NestedTokens:
        """The whole texts context + candidate + joiner + response, cut into shared pieces
        where their tokens fall (``llm.pieces``), checked against the context window."""
        text = context if isinstance(context, str) else self.render_chat(context)
        toks = nested_tokens(self._tokenize_whole, text, candidates, responses, joiner)
        self._check_length(toks.longest(), "scoring context + candidate + response")
        return toks

    @torch.inference_mode()
    def _score_nested(
        self, context: Prompt, candidates: list[str], responses: list[str], joiner: str
    ) -> Iterator[tuple[int, int, list[float]]]:
        toks = self.nested_tokens(context, candidates, responses, joiner)
        pace(self.threads)
        yield from scoring.score_nested(self.prefiller, toks)

    @torch.inference_mode()
    def _score_many(
        self, prefixes: list[Prompt], continuations: list[list[str]]
    ) -> list[list[list[float]]]:
        rows = [
            self.nested_tokens(p, [""], cs) for p, cs in zip(prefixes, continuations, strict=True)
        ]
        ctx = [t.context for t in rows]
        conts = [t.branches[0] for t in rows]
        leads = [t.leads[0] for t in rows]
        pace(self.threads)
        return scoring.score_many(self.prefiller, ctx, conts, leads, self.batch_size)

    @torch.inference_mode()
    def score_nested_naive(
        self, context: Prompt, candidates: Sequence[str], responses: Sequence[str], joiner: str = ""
    ) -> list[list[list[float]]]:
        """The reference: one plain forward of each whole text, tokenized at once, per
        (candidate, response); a response's tokens are those its characters fall in (by the
        tokenizer's offsets). Used by the tests and ``bench/scoring.py``."""
        text = context if isinstance(context, str) else self.render_chat(context)
        out = []
        for cand in candidates:
            row: list[list[float]] = []
            for resp in responses:
                whole = text + cand + joiner + resp
                enc = self.tokenizer(
                    whole, add_special_tokens=self._adds_bos(whole), return_offsets_mapping=True
                )
                ids, begin = enc["input_ids"], len(whole) - len(resp)
                spans = enc["offset_mapping"]
                first = next((i for i, (_, end) in enumerate(spans) if end > begin), len(ids))
                row.append(scoring.plain_logprobs(self.net, ids, first) if resp else [])
            out.append(row)
        return out
