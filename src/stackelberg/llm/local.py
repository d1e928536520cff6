"""The ``local`` backend: a transformers causal LM in this process, on CPU or GPU.

Generation is our own sampling loop over the KV cache, many sequences per forward pass (padded,
see ``_prefill``), with one ``torch.Generator`` per sequence seeded from the request's seed and the
sample's index: a request's output does not depend on what else is in the batch, which makes
runs reproducible and cached answers valid. Prompts reuse the keys and values of earlier
prompts' shared starts (``kv.PrefixStore``: the rules, a player's previous prompt), and decoding
appends to the cache in place (``kv.GrowingLayer``).

Scoring computes a shared prefix once and reuses its KV cache: the context once, then one
forward per candidate that packs the candidate and all its responses into one row, as a tree
(a custom attention mask lets each response see the context, the candidate and itself, not
its siblings). So the context is computed once, each candidate once, each response once per
candidate; nothing is padded and the context cache is never copied per row. Logits are
computed only at the positions that predict a scored token.
"""

from __future__ import annotations

import hashlib
import inspect
import logging
import os
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, DynamicCache

from stackelberg.llm.base import Backend, Message, Prompt, SamplingParams, plain_chat
from stackelberg.llm.cache import ResponseCache
from stackelberg.llm.embedded import EMBEDDED_NAME, GGUF_FILE, ensure_checkpoint
from stackelberg.llm.errors import ContextLengthError, ModelNotFoundError
from stackelberg.llm.kv import GrowingLayer, PrefixStore, block_hashes

log = logging.getLogger(__name__)

#: Most tokens packed into one scoring forward (its mask is tokens x (prefix + tokens)).
PACK_TOKENS = 2048

#: A prefill group may compute this many times its real tokens (the rest is padding).
PAD_SLACK = 1.25


class Prefill(NamedTuple):
    """Prompts computed side by side: row ``r`` of each tensor is prompt ``order[r]``."""

    last: torch.Tensor  # hidden state of each prompt's last token, [rows, hidden]
    cache: Any  # the KV cache, with spare room for what follows
    mask: torch.Tensor  # [rows, width]: 1 where a cached position is a real token
    order: list[int]


def pad_groups(lengths: Sequence[int], slack: float = PAD_SLACK) -> list[tuple[int, int]]:
    """Consecutive slices of ascending ``lengths`` that each pad to at most ``slack`` times
    their real tokens: one forward per slice wastes little on padding."""
    groups: list[tuple[int, int]] = []
    start, total = 0, 0
    for i, n in enumerate(lengths):
        if i > start and (i - start + 1) * n > slack * (total + n):
            groups.append((start, i))
            start, total = i, 0
        total += n
    if lengths:
        groups.append((start, len(lengths)))
    return groups


def sample_seed(seed: int, index: int) -> int:
    """The generator seed of sample ``index`` of a request seeded ``seed``."""
    digest = hashlib.sha256(f"{seed}:{index}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)


def _busy_elsewhere(window: float = 0.3) -> float:
    """Cores kept busy by other processes, measured over ``window`` seconds.

    Not the load average: it counts this very process too, so after a minute of our own
    two-thread work it reads 2 and would leave us one thread. Here our own CPU time
    (/proc/self/stat) is subtracted from the machine's (/proc/stat).
    """

    def sample() -> tuple[float, float, float]:
        with open("/proc/stat") as fh:
            cpu = [float(x) for x in fh.readline().split()[1:]]
        with open("/proc/self/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        own = float(fields[11]) + float(fields[12])  # utime + stime, in clock ticks
        idle = cpu[3] + (cpu[4] if len(cpu) > 4 else 0.0)
        return sum(cpu), sum(cpu) - idle, own

    try:
        before = sample()
        time.sleep(window)
        after = sample()
    except (OSError, ValueError, IndexError):  # not Linux: the load average, minus ourselves
        return max(0.0, os.getloadavg()[0] - 1.0)
    return busy_cores_elsewhere(before, after, os.cpu_count() or 1)


def busy_cores_elsewhere(
    before: tuple[float, float, float], after: tuple[float, float, float], cores: int
) -> float:
    """Cores other processes kept busy between two (total, busy, own) tick samples."""
    total0, busy0, own0 = before
    total1, busy1, own1 = after
    if total1 <= total0:
        return 0.0
    return max(0.0, (busy1 - busy0) - (own1 - own0)) / (total1 - total0) * cores


def _set_threads(threads: int | None) -> None:
    """Threads for CPU inference: the configured number, else OMP_NUM_THREADS, else free cores.

    "Free" is the cores this process may use minus those other processes keep busy: with two
    threads on a two-core machine that another process keeps busy, every parallel region
    waits on a descheduled thread and a forward pass runs ~10x slower than with one thread.
    """
    if threads is None and os.environ.get("OMP_NUM_THREADS"):
        return
    if threads is None:
        try:
            cores = len(os.sched_getaffinity(0))
        except AttributeError:  # not on Linux
            cores = os.cpu_count() or 1
        threads = min(cores, max(1, round(cores - _busy_elsewhere())))
    torch.set_num_threads(max(1, threads))
    log.info("local backend: %d torch threads", torch.get_num_threads())


def sample_tokens(
    logits: torch.Tensor,
    temperatures: Sequence[float],
    top_ps: Sequence[float],
    generators: Sequence[torch.Generator],
    top_k: int = 256,
) -> torch.Tensor:
    """One token per row with that row's settings: greedy at temperature 0, else nucleus
    sampling with the row's generator.

    Each sampled row draws exactly one uniform number from its own generator and picks by
    inverse CDF over its tokens sorted by probability, so a row's token depends on nothing
    else in the batch. Sorting the whole vocabulary costs as much as a decode step; a row
    whose top ``top_k`` tokens already hold ``top_p`` of the mass (nearly always) sorts only
    those.
    """
    picks = logits.argmax(-1)
    rows = [r for r, t in enumerate(temperatures) if t > 0]
    if not rows:
        return picks
    temp = torch.tensor([temperatures[r] for r in rows], dtype=torch.float32)[:, None]
    scaled = logits[rows].float() / temp
    logz = torch.logsumexp(scaled, dim=-1, keepdim=True)
    top_v, top_i = scaled.topk(min(top_k, scaled.shape[-1]), dim=-1)
    top_probs = (top_v - logz).exp()
    for k, row in enumerate(rows):
        u = torch.rand((), generator=generators[row])
        top_p = top_ps[row]
        if top_probs[k].sum() >= top_p:
            probs, order = top_probs[k], top_i[k]
        else:
            probs, order = (scaled[k] - logz[k]).exp().sort(descending=True)
        keep = (probs.cumsum(-1) - probs) < top_p  # the most likely token always stays
        cum = (probs * keep).cumsum(-1)
        j = int(torch.searchsorted(cum, (u * cum[-1]).reshape(1)).clamp(max=len(cum) - 1))
        picks[row] = order[j]
    return picks


def cut_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """The text before the earliest stop string, and whether one was found."""
    cuts = [i for i in (text.find(s) for s in stop if s) if i >= 0]
    return (text[: min(cuts)], True) if cuts else (text, False)


def adapter_digest(adapter: str) -> str:
    """A short content hash of a PEFT adapter folder's weights."""
    folder = Path(adapter)
    files = sorted(folder.glob("adapter_model.*")) + sorted(folder.glob("adapter_config.json"))
    if not files:
        raise ModelNotFoundError(f"local backend: {adapter!r} is not a PEFT adapter folder")
    h = hashlib.sha256()
    for f in files:
        h.update(f.read_bytes())
    return h.hexdigest()[:12]


def merge_adapter(lm: Any, adapter: str) -> Any:
    """The model with a LoRA adapter merged in (inference runs at the base model's speed)."""
    from peft import PeftModel

    return PeftModel.from_pretrained(lm, adapter).merge_and_unload()


def quantize_int8(lm: Any) -> Any:
    """Linear layers with int8 weights (activations quantized on the fly), for CPU players.

    A CPU decode step at small batch reads every weight once, so it is memory-bound: int8
    weights make it ~3x faster. Scores move by ~1e-2 nats, so the Measurer stays float32.
    Activations are quantized per batch, so a row's numbers (and now and then a choice)
    depend on the rows batched with it: the same run replays exactly, but a game played
    alone may differ from the same game played among others, unlike float32.
    """
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch marks the eager quantization API deprecated
        return torch.ao.quantization.quantize_dynamic(lm, {torch.nn.Linear}, dtype=torch.qint8)


class LocalBackend(Backend):
    """A causal LM loaded with transformers; ``model="embedded"`` is the built-in SmolLM2."""

    name = "local"

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
        prefix_cache_mb: int = 4096,
    ) -> None:
        path = str(ensure_checkpoint()) if model == EMBEDDED_NAME else model
        # The cache key names the embedded file, so a new embedded model invalidates old answers;
        # with a LoRA adapter it also names the adapter's weights, so each training run is its own.
        name = f"embedded:{GGUF_FILE}" if model == EMBEDDED_NAME else model
        if adapter:
            name += f"+lora:{adapter_digest(adapter)}"
        if dtype == "int8":
            name += "+int8"  # its answers are its own in the response cache
        super().__init__(name, cache)
        self.device = torch.device(
            ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
        )
        if self.device.type == "cpu":
            _set_threads(threads)
            # Grouped-query attention without copying each key/value head per query head: with
            # a mask (every prefill here) transformers copies them unless told that the
            # kernel takes grouped heads, which torch's CPU kernel does. ~20% of a prefill.
            os.environ.setdefault("TRANSFORMERS_SDPA_FORCE_GQA", "1")
        if dtype == "auto":
            dtype = "float32" if self.device.type == "cpu" else "bfloat16"
        if dtype == "int8" and self.device.type != "cpu":
            raise ValueError("local backend: dtype 'int8' is for CPU; use bfloat16 on a GPU")
        load_dtype = torch.float32 if dtype == "int8" else getattr(torch, dtype)
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(path)
            self.lm = AutoModelForCausalLM.from_pretrained(path, dtype=load_dtype)
        except (OSError, ValueError) as err:
            where = (
                "a folder"
                if Path(path).exists()
                else "a local folder nor in the Hugging Face cache"
            )
            raise ModelNotFoundError(
                f"local backend: cannot load model {model!r}: not {where} with a checkpoint "
                f"(nothing is downloaded on this machine); use 'embedded' or a checkpoint path "
                f"({str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__})"
            ) from None
        if adapter:
            self.lm = merge_adapter(self.lm, adapter)
        if dtype == "int8":
            self.lm = quantize_int8(self.lm)
        self.lm.to(self.device).eval()
        self.batch_size = batch_size
        self.prefix_store = PrefixStore(prefix_cache_mb * 2**20)
        self._context_window = context_window or int(
            getattr(self.lm.config, "max_position_embeddings", 2048)
        )
        self.decoder = self.lm.base_model
        self.head = self.lm.get_output_embeddings()
        params = inspect.signature(self.decoder.forward).parameters
        self._cache_kw = "cache" if "cache" in params else "past_key_values"
        gen_eos = getattr(self.lm.generation_config, "eos_token_id", None)
        eos = gen_eos if isinstance(gen_eos, list) else [gen_eos]
        self.eos_ids = {i for i in [*eos, self.tokenizer.eos_token_id] if i is not None}
        pad = self.tokenizer.pad_token_id
        self.pad_id = pad if pad is not None else min(self.eos_ids, default=0)

    # ---- text and tokens ------------------------------------------------------------------

    @property
    def context_window(self) -> int:
        return self._context_window

    def render_chat(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> str:
        if not self.tokenizer.chat_template:
            return plain_chat(messages, add_generation_prompt)
        return self.tokenizer.apply_chat_template(
            list(messages), tokenize=False, add_generation_prompt=add_generation_prompt
        )

    def encode(self, text: str, first: bool = True) -> list[int]:
        """Token ids of one piece; only the first piece gets special tokens (BOS), once."""
        bos = self.tokenizer.bos_token
        special = first and not (bos and text.startswith(bos))
        return self.tokenizer(text, add_special_tokens=special)["input_ids"]

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

    # ---- forward passes ---------------------------------------------------------------------

    def _forward(
        self,
        ids: torch.Tensor,
        cache: Any,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, Any]:
        """Hidden states (before the LM head) and the grown cache."""
        out = self.decoder(
            input_ids=ids.to(self.device),
            attention_mask=attention_mask,
            position_ids=position_ids,
            use_cache=cache is not None,
            **{self._cache_kw: cache},
        )
        return out.last_hidden_state, getattr(out, self._cache_kw)

    def clear_prefix_cache(self) -> None:
        self.prefix_store.clear()

    def _prefill(
        self, rows: list[list[int]], spare: int = 0, chains: list[list[bytes]] | None = None
    ) -> Prefill:
        """The last hidden states, the KV cache and the attention mask of prompts side by side.

        Each row's stored prefix blocks are copied in and only its rest is computed. Rows are
        sorted by the length of their rest and computed in groups of similar length (one
        forward per group), so that short rests are not padded to the longest one. Row
        layout: ``[pad][stored P_i] | [rest R_i][pad]``, then ``spare`` free slots for
        decoding: pads are masked and positions count real tokens only; every pad query
        follows a real token, so no attention row is empty (no NaN). The full blocks computed
        here are stored for later prompts. ``chains``: the rows' block hashes, when the caller
        has them. The result's rows are in ``order`` (indices into ``rows``).
        """
        store = self.prefix_store
        size = store.block
        chains = chains or [block_hashes(ids, size) for ids in rows]
        if store.max_bytes > 0 and len(rows) > 1:
            self._prefill_shared(rows, chains)
        stored = [
            min(store.cached(c), (len(ids) - 1) // size)
            for ids, c in zip(rows, chains, strict=True)
        ]
        order = sorted(range(len(rows)), key=lambda r: len(rows[r]) - stored[r] * size)
        rows = [rows[r] for r in order]
        chains = [chains[r] for r in order]
        pre = [stored[r] * size for r in order]
        rest = [len(ids) - p for ids, p in zip(rows, pre, strict=True)]
        groups = pad_groups(rest)
        width = max(max(pre[a:b]) + rest[b - 1] for a, b in groups)
        cfg = self.lm.config
        heads = getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads
        dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        buf = torch.empty(
            (cfg.num_hidden_layers, 2, len(rows), heads, width + spare, dim),
            dtype=self.lm.dtype,
            device=self.device,
        )
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        last = []
        for a, b in groups:
            pmax, rmax = max(pre[a:b]), rest[b - 1]
            new_ids = torch.full((b - a, rmax), self.pad_id, dtype=torch.long)
            for r in range(a, b):
                p, n = pre[r], rest[r]
                buf[:, :, r, :, : pmax - p].zero_()  # masked, but must not be NaN
                buf[:, :, r, :, pmax + rmax : width].zero_()
                if p:
                    blocks = [store.get(h) for h in chains[r][: p // size]]
                    buf[:, :, r, :, pmax - p : pmax] = torch.cat(blocks, dim=3)
                mask[r, pmax - p : pmax + n] = 1
                new_ids[r - a, :n] = torch.tensor(rows[r][p:])
            cache = DynamicCache(config=cfg)
            cache.layers = [GrowingLayer(spare) for _ in range(cfg.num_hidden_layers)]
            for layer, kv in zip(cache.layers, buf[:, :, a:b], strict=True):
                layer.adopt(kv[0], kv[1], pmax)
            positions = torch.tensor(pre[a:b])[:, None] + torch.arange(rmax)[None]
            hidden, cache = self._forward(
                new_ids,
                cache,
                mask[a:b, : pmax + rmax].to(self.device),
                positions.to(self.device),
            )
            last.append(hidden[torch.arange(b - a), torch.tensor(rest[a:b]) - 1])
            for r in range(a, b):
                for j in range(pre[r] // size, len(rows[r]) // size):
                    at = pmax + j * size - pre[r]
                    store.put(chains[r][j], buf[:, :, r, :, at : at + size].clone())
        store.hits += sum(pre)
        store.misses += sum(rest)
        cache = DynamicCache(config=cfg)
        cache.layers = [GrowingLayer(spare) for _ in range(cfg.num_hidden_layers)]
        for layer, kv in zip(cache.layers, buf, strict=True):
            layer.adopt(kv[0], kv[1], width)
        return Prefill(torch.cat(last), cache, mask.to(self.device), order)

    def _prefill_shared(self, rows: list[list[int]], chains: list[list[bytes]]) -> None:
        """Compute once, and store, the prefix blocks that several rows share and lack."""
        counts = Counter(h for chain in chains for h in set(chain))
        shared: dict[bytes, tuple[list[int], list[bytes]]] = {}
        for ids, chain in zip(rows, chains, strict=True):
            k = 0
            while k < len(chain) and counts[chain[k]] > 1:
                k += 1
            if k and chain[k - 1] not in shared and self.prefix_store.cached(chain[:k]) < k:
                shared[chain[k - 1]] = (ids[: k * self.prefix_store.block], chain[:k])
        if shared:
            prefixes, prefix_chains = zip(*shared.values(), strict=True)
            self._prefill(list(prefixes), chains=list(prefix_chains))

    def _logprobs(self, hidden: torch.Tensor, targets: list[int]) -> list[float]:
        """Log-probabilities of ``targets``, each predicted by the matching row of ``hidden``."""
        if not targets:
            return []
        logits = self.head(hidden).float()
        logp = torch.log_softmax(logits, dim=-1)
        idx = torch.tensor(targets, device=logp.device).unsqueeze(-1)
        return logp.gather(-1, idx).squeeze(-1).tolist()

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
        # Similar lengths together (less padding); chunks of at most batch_size sequences.
        order = sorted(range(len(prompts)), key=lambda i: len(ids[i]))
        chunk: list[int] = []
        rows = 0
        for i in order:
            if chunk and rows + ns[i] > self.batch_size:
                yield from self._generate_chunk(chunk, ids, ns, seeds, params)
                chunk, rows = [], 0
            chunk.append(i)
            rows += ns[i]
        if chunk:
            yield from self._generate_chunk(chunk, ids, ns, seeds, params)

    def _generate_chunk(
        self,
        chunk: list[int],
        ids: list[list[int]],
        ns: list[int],
        seeds: list[int],
        params: list[SamplingParams],
    ) -> Iterator[tuple[int, list[str]]]:
        """Prefill each prompt once (reusing stored prefix blocks), fork its cache into its n
        samples, then decode together, each row with its own prompt's settings."""
        longest = max(params[i].max_new_tokens for i in chunk)
        last, cache, mask, order = self._prefill([ids[i] for i in chunk], longest)
        chunk = [chunk[k] for k in order]  # the prompt of each cache row
        if any(ns[i] > 1 for i in chunk):
            expand = torch.tensor([r for r, i in enumerate(chunk) for _ in range(ns[i])])
            expand = expand.to(self.device)
            cache.batch_select_indices(expand)
            mask, last = mask[expand], last[expand]
        owners = [(i, j) for i in chunk for j in range(ns[i])]  # (prompt, sample) per row
        setting = [params[i] for i, _ in owners]
        gens = [torch.Generator().manual_seed(sample_seed(seeds[i], j)) for i, j in owners]
        tokens: list[list[int]] = [[] for _ in owners]
        live = list(range(len(owners)))  # the owner of each row still in the batch
        finished: set[int] = set()  # owners done but still riding along in the batch
        for step in range(longest):
            nxt = sample_tokens(
                self.head(last).float().cpu(),
                [setting[g].temperature for g in live],
                [setting[g].top_p for g in live],
                [gens[g] for g in live],
            ).tolist()
            for g, tok in zip(live, nxt, strict=True):
                if g in finished:
                    continue
                if tok in self.eos_ids:
                    finished.add(g)
                    continue
                tokens[g].append(tok)
                stop = setting[g].stop
                if len(tokens[g]) >= setting[g].max_new_tokens or (
                    stop and cut_at_stop(self._decode(tokens[g]), stop)[1]
                ):
                    finished.add(g)
            n_done = sum(g in finished for g in live)
            if n_done == len(live):
                break
            # Drop finished rows once it pays: copying the cache costs about two steps' reads
            # of it, and each dropped row saves one read per remaining step.
            if n_done and n_done * (longest - step - 1) >= 2 * len(live):
                keep = [r for r, g in enumerate(live) if g not in finished]
                sel = torch.tensor(keep, device=self.device)
                cache.batch_select_indices(sel)
                mask, nxt = mask[sel], [nxt[r] for r in keep]
                live = [live[r] for r in keep]
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=-1)
            pos = mask.sum(-1, keepdim=True) - 1
            hidden, cache = self._forward(torch.tensor(nxt).unsqueeze(-1), cache, mask, pos)
            last = hidden[:, -1]
        texts = [
            cut_at_stop(self._decode(t), x.stop)[0] for t, x in zip(tokens, setting, strict=True)
        ]
        pos = 0
        for i in chunk:
            yield i, texts[pos : pos + ns[i]]
            pos += ns[i]

    def _decode(self, tokens: list[int]) -> str:
        return self.tokenizer.decode(tokens, skip_special_tokens=True)

    # ---- scoring --------------------------------------------------------------------------------

    def _piece_ids(
        self, context: Prompt, candidates: list[str], responses: list[str], joiner: str
    ) -> tuple[list[int], list[list[int]], list[list[int]]]:
        ctx = self.prompt_ids(context)
        join = self.encode(joiner, first=False) if joiner else []
        cands = [(self.encode(c, first=False) if c else []) + join for c in candidates]
        resps = [self.encode(r, first=False) if r else [] for r in responses]
        if not ctx:
            raise ValueError(
                "score: the context is empty and the tokenizer adds no BOS token, so the first "
                "token has nothing to be predicted from; give a non-empty prefix"
            )
        longest = len(ctx) + max(map(len, cands), default=0) + max(map(len, resps), default=0)
        self._check_length(longest, "scoring context + candidate + response")
        return ctx, cands, resps

    def _additive_mask(self, allowed: torch.Tensor) -> torch.Tensor:
        """An attention bias from a boolean mask: 0 where allowed, the dtype's minimum not."""
        return torch.zeros(allowed.shape, dtype=self.lm.dtype).masked_fill(
            ~allowed, torch.finfo(self.lm.dtype).min
        )

    def _tree_forward(
        self, cache: Any, prefix_len: int, segments: list[list[int]], parents: list[int | None]
    ) -> torch.Tensor:
        """Run a tree of continuations of one cached prefix as ONE packed row; return its states.

        Segment ``i`` attends to the whole prefix, to its ancestors (``parents[i]``, which come
        earlier in the list) and causally to itself, never to its siblings; its positions
        continue from its parent's end. The result equals one plain forward per root-to-leaf
        path, without copying the prefix cache per path. The cache is cut back to the prefix
        afterwards, so it can serve the next tree.
        """
        lengths = [len(s) for s in segments]
        offsets = [sum(lengths[:i]) for i in range(len(segments))]
        q = sum(lengths)
        allowed = torch.zeros((q, prefix_len + q), dtype=torch.bool)
        allowed[:, :prefix_len] = True
        starts: list[int] = []  # position of each segment's first token
        pieces = []
        for i, n in enumerate(lengths):
            a, parent = prefix_len + offsets[i], parents[i]
            rows = slice(offsets[i], offsets[i] + n)
            allowed[rows, a : a + n] = torch.ones((n, n), dtype=torch.bool).tril()
            while parent is not None:
                pa = prefix_len + offsets[parent]
                allowed[rows, pa : pa + lengths[parent]] = True
                parent = parents[parent]
            parent = parents[i]
            starts.append(prefix_len if parent is None else starts[parent] + lengths[parent])
            pieces.append(starts[i] + torch.arange(n))
        mask = self._additive_mask(allowed)
        ids = torch.tensor([[t for s in segments for t in s]], dtype=torch.long)
        hidden, cache = self._forward(
            ids, cache, mask[None, None].to(self.device), torch.cat(pieces)[None].to(self.device)
        )
        for layer in cache.layers:  # back to the prefix: views, no copy
            layer.keys = layer.keys[:, :, :prefix_len]
            layer.values = layer.values[:, :, :prefix_len]
        return hidden[0]

    @torch.inference_mode()
    def _score_nested(
        self, context: Prompt, candidates: list[str], responses: list[str], joiner: str
    ) -> Iterator[tuple[int, int, list[float]]]:
        ctx, cands, resps = self._piece_ids(context, candidates, responses, joiner)
        last, cache, _, _ = self._prefill([ctx], spare=PACK_TOKENS)
        ctx_last = last[0]
        todo = [r for r in range(len(resps)) if resps[r]]
        for c, cand in enumerate(cands):
            for r in range(len(resps)):
                if not resps[r]:
                    yield c, r, []
            # One packed forward per candidate: the candidate, then its responses as branches.
            for part in self._chunks(todo, [len(x) for x in resps], PACK_TOKENS - len(cand)):
                segments = ([cand] if cand else []) + [resps[r] for r in part]
                parents = [None] + [0] * len(part) if cand else [None] * len(part)
                states = self._tree_forward(cache, len(ctx), segments, parents)
                before = states[len(cand) - 1] if cand else ctx_last
                start, preds = len(cand), []
                for r in part:  # token k of a response is predicted by the state before it
                    preds += [before[None], states[start : start + len(resps[r]) - 1]]
                    start += len(resps[r])
                flat = self._logprobs(torch.cat(preds), [t for r in part for t in resps[r]])
                start = 0
                for r in part:
                    yield c, r, flat[start : start + len(resps[r])]
                    start += len(resps[r])

    @torch.inference_mode()
    def _score_many(
        self, prefixes: list[Prompt], continuations: list[list[str]]
    ) -> list[list[list[float]]]:
        """Many prompts, each with its own continuations, prefilled side by side.

        The prompts reuse stored prefix blocks like generation does (the rules, the same
        player's previous prompt), then one forward per chunk packs each row's continuations
        after its prompt as branches that see the prompt and themselves, not each other.
        """
        ctx = [self.prompt_ids(p) for p in prefixes]
        conts = [[self.encode(c, first=False) if c else [] for c in cs] for cs in continuations]
        for i, cs in zip(ctx, conts, strict=True):
            if not i:
                raise ValueError(
                    "score: a prefix is empty and the tokenizer adds no BOS token, so the "
                    "first token has nothing to be predicted from; give a non-empty prefix"
                )
            self._check_length(len(i) + max(map(len, cs), default=0), "prefix + continuation")
        out: list[list[list[float]]] = [[[] for _ in cs] for cs in conts]
        order = sorted(range(len(ctx)), key=lambda i: len(ctx[i]))
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            width = max(sum(map(len, conts[i])) for i in chunk)
            if width == 0:
                continue
            last, cache, mask, rows = self._prefill([ctx[i] for i in chunk], spare=width)
            chunk = [chunk[k] for k in rows]
            hidden = self._branch_forward(cache, mask, [conts[i] for i in chunk], width)
            states, targets, spans = [], [], []
            for r, i in enumerate(chunk):
                at = 0
                for k, toks in enumerate(conts[i]):
                    if toks:  # token t is predicted by the state before it
                        states += [last[r, None], hidden[r, at : at + len(toks) - 1]]
                        targets += toks
                        spans.append((i, k, len(toks)))
                        at += len(toks)
            flat = self._logprobs(torch.cat(states), targets)
            at = 0
            for i, k, n in spans:
                out[i][k] = flat[at : at + n]
                at += n
        return out

    def _branch_forward(
        self, cache: Any, mask: torch.Tensor, branches: list[list[list[int]]], width: int
    ) -> torch.Tensor:
        """Hidden states of each row's branches packed after its cached prompt, ``[rows,
        width]``: a branch sees the row's real prompt tokens and, causally, itself."""
        n_rows, prompt = mask.shape
        ids = torch.full((n_rows, width), self.pad_id, dtype=torch.long)
        positions = mask.sum(-1, keepdim=True).cpu().repeat(1, width)
        allowed = torch.zeros((n_rows, width, prompt + width), dtype=torch.bool)
        allowed[:, :, :prompt] = mask.bool().cpu()[:, None, :]
        for r, row in enumerate(branches):
            at = 0
            for toks in row:
                n = len(toks)
                ids[r, at : at + n] = torch.tensor(toks, dtype=torch.long)
                positions[r, at : at + n] += torch.arange(n)
                causal = torch.ones((n, n), dtype=torch.bool).tril()
                allowed[r, at : at + n, prompt + at : prompt + at + n] = causal
                at += n
        bias = self._additive_mask(allowed)
        hidden, _ = self._forward(
            ids, cache, bias[:, None].to(self.device), positions.to(self.device)
        )
        return hidden

    @staticmethod
    def _chunks(items: list[int], lengths: list[int], budget: int) -> Iterator[list[int]]:
        """Consecutive groups of items whose lengths sum to at most ``budget`` (at least one)."""
        group: list[int] = []
        total = 0
        for i in items:
            if group and total + lengths[i] > budget:
                yield group
                group, total = [], 0
            group.append(i)
            total += lengths[i]
        if group:
            yield group

    @torch.inference_mode()
    def score_nested_naive(
        self, context: Prompt, candidates: Sequence[str], responses: Sequence[str], joiner: str = ""
    ) -> list[list[list[float]]]:
        """The reference: one plain full forward per (candidate, response), batch size 1.

        Same tokenisation as the fast path; used by the tests and ``bench/scoring.py``.
        """
        ctx, cands, resps = self._piece_ids(context, list(candidates), list(responses), joiner)
        out: list[list[list[float]]] = []
        for cand in cands:
            row = []
            for resp in resps:
                full = ctx + cand + resp
                hidden, _ = self._forward(torch.tensor([full]), None)
                start = len(full) - len(resp)
                row.append(self._logprobs(hidden[0, start - 1 : len(full) - 1], resp))
            out.append(row)
        return out
