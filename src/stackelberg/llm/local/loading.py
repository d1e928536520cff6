"""Loading a checkpoint for the local backend: the weights, a LoRA adapter beside them (or
merged in), int8, and a half-precision copy of a float32 checkpoint kept in the cache.

Everything that decides which weights run (and so names them in the response cache) is
here; nothing is downloaded, so a missing model is one clear error.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from stackelberg.io import atomic_dir, atomic_writer
from stackelberg.llm.embedded import EMBEDDED_MODELS, cache_dir
from stackelberg.llm.errors import ModelNotFoundError
from stackelberg.llm.local.fused import fuse_shared_inputs
from stackelberg.llm.local.lora import lean_lora

log = logging.getLogger(__name__)


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


def checkpoint_digest(path: str) -> str:
    """A short content hash of a checkpoint folder's files (weights, config, tokenizer).

    The response cache and the loaded-weights table name a local checkpoint by it, not by
    its path, so answers of other weights written to the same folder are never served.
    Hashing reads every byte once; the digest is kept in the cache beside each file's name,
    size and modification time, so a later load of unchanged files only stats them.
    """
    folder = Path(path).resolve()
    files = [f for f in sorted(folder.iterdir()) if f.is_file() and not f.name.startswith(".")]
    stat = [[f.name, (st := f.stat()).st_size, st.st_mtime_ns] for f in files]
    memo = cache_dir() / "digests" / f"{hashlib.sha256(str(folder).encode()).hexdigest()[:16]}.json"
    try:
        kept = json.loads(memo.read_text())
        if kept["files"] == stat:
            return kept["digest"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode() + b"\0")
        with open(f, "rb") as fh:
            for block in iter(lambda fh=fh: fh.read(1 << 22), b""):
                h.update(block)
    digest = h.hexdigest()[:16]
    try:
        with atomic_writer(memo) as out:
            json.dump({"files": stat, "digest": digest}, out)
    except OSError as err:  # a read-only cache only costs hashing again next time
        log.warning("local backend: digest of %s not kept (%s)", path, err)
    return digest


def merge_adapter(lm: Any, adapter: str) -> Any:
    """The model with a LoRA adapter merged in (inference runs at the base model's speed):
    for adapters :func:`lora_beside` cannot keep apart (DoRA, whole modules saved)."""
    from peft import PeftModel

    return PeftModel.from_pretrained(lm, adapter).merge_and_unload()


def _first_line(err: BaseException) -> str:
    """A library error in one line: its message's first line, else its type's name."""
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def plain_lora(adapter: str) -> bool:
    """Whether an adapter is LoRA matrices only: nothing but ``lora_A``/``lora_B`` beside
    the layers it adapts (no DoRA magnitudes, no whole modules saved, no trained tokens)."""
    from peft import LoraConfig, PeftConfig

    config = PeftConfig.from_pretrained(adapter)
    return (
        isinstance(config, LoraConfig)
        and not config.use_dora
        and not config.modules_to_save
        and not getattr(config, "trainable_token_indices", None)
        and not getattr(config, "target_parameters", None)
        and getattr(config, "lora_bias", False) is False
    )


def lora_beside(lm: Any, adapter: str) -> Any:
    """``lm`` with a plain LoRA adapter beside its weights, not merged into them: LoRA
    layers (their matrices float32; PEFT reads them, ``lora.lean_lora`` runs them) around
    ``lm``'s own modules, which are shared, not copied, so ``lm`` still runs without the
    adapter for whoever else uses it.

    Why not merged: int8 and bfloat16 round the merged weights, and a LoRA update is
    smaller than their step (the embedded default's GRPO moves a weight by at most 2% of
    its int8 step: merged and quantized, 0.10% of the int8 weights changed, the rest of the
    update was rounded away). Beside the weights it is kept whole, and one loaded copy of
    the base serves the players, the untrained Refiner and every trained one.
    """
    from accelerate import init_empty_weights
    from peft import PeftModel

    with init_empty_weights():
        skeleton = AutoModelForCausalLM.from_config(lm.config)
    # PEFT puts LoRA matrices where the layer they adapt lives: give the skeleton storage
    # that is allocated but never written or read (no page of it becomes resident); its
    # layers are replaced by lm's below.
    skeleton.to_empty(device="cpu")
    shared = dict(lm.named_modules())
    try:
        tuned = PeftModel.from_pretrained(skeleton, adapter).get_base_model()
        for name, module in list(tuned.named_modules()):
            if not name or ".lora_" in name or next(module.children(), None) is not None:
                continue  # the adapter's own, or a container
            parent, _, child = name.rpartition(".")
            setattr(tuned.get_submodule(parent), child, shared[name.removesuffix(".base_layer")])
    except (ValueError, RuntimeError, KeyError) as err:  # another model's adapter
        raise ModelNotFoundError(
            f"local backend: adapter {adapter!r} does not fit this model ({_first_line(err)})"
        ) from None
    lean_lora(tuned)
    device = next(lm.parameters()).device
    return tuned.to(device).eval()


def quantize_int8(lm: Any) -> Any:
    """Linear layers with int8 weights (activations quantized on the fly), for CPU players.

    A CPU decode step at small batch reads every weight once, so it is memory-bound: int8
    weights make it ~3x faster. It costs accuracy: on the embedded model a text's
    log-probabilities differ from float32's by about 1.5 nats a token on average (a
    99-token Werewolf chat; per-channel weight scales: 1.4), so the Measurer and the Refiner
    being trained stay float32, and int8 is a speed choice for players only.
    Activations are quantized per batch, so a row's numbers (and now and then a choice)
    depend on the rows batched with it: the same run replays exactly, but a game played
    alone may differ from the same game played among others, unlike float32. The
    projections that read one input run as one matmul (``fused``: the same numbers).
    """
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch marks the eager quantization API deprecated
        # in place: a copy would hold the float32 weights twice while quantizing
        lm = torch.ao.quantization.quantize_dynamic(
            lm, {torch.nn.Linear}, dtype=torch.qint8, inplace=True
        )
    fuse_shared_inputs(lm)
    return lm


#: CPU flags of native bfloat16 arithmetic (AVX512-BF16, AMX): without them a CPU emulates
#: bfloat16 matmuls and float32 is faster
NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16")


#: ``ONEDNN_MAX_CPU_ISA`` values under which oneDNN still has bfloat16 instructions; any
#: other cap (AVX2, AVX512_CORE, ...) makes it emulate them, as a CPU without them does
BF16_ISAS = ("BF16", "AMX", "AVX10", "ALL")


def native_bf16() -> bool:
    """Whether this machine's CPU computes bfloat16 natively (Linux: /proc/cpuinfo), and
    oneDNN may use it: a CPU capped to an older ISA (``ONEDNN_MAX_CPU_ISA=AVX2``, how an
    AVX2-only machine is measured on a newer one) computes bfloat16 emulated, far slower
    than float32."""
    cap = os.environ.get("ONEDNN_MAX_CPU_ISA", "").upper()
    if cap and not any(isa in cap for isa in BF16_ISAS):
        return False
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return any(flag in line.split() for flag in NATIVE_BF16_FLAGS)
    except OSError:
        pass
    return False


#: oneDNN primitives (bfloat16 matmul kernels, one per shape) a process keeps. Sequence
#: lengths vary, so shapes seldom repeat, and at oneDNN's default of 1024 each GRPO stage of
#: the default left ~0.15 GiB more resident memory (four in a row: 1.99 vs 1.55 GiB after)
ONEDNN_CACHE_CAPACITY = "16"


def bound_onednn_cache() -> None:
    """Cap oneDNN's primitive cache (CPU bfloat16) before its first kernel: oneDNN reads the
    variable once, at first use; a value already set wins."""
    os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", ONEDNN_CACHE_CAPACITY)


def weights_dtype(dtype: str, device: torch.device) -> str:
    """The weights' dtype: 'auto' is float32 on a CPU and bfloat16 on a GPU;
    'bfloat16_if_native' is bfloat16 on a GPU and on a CPU that computes it natively, else
    float32 (the embedded Measurer: about 1.6x faster on such a CPU, never slower elsewhere).

    >>> weights_dtype("auto", torch.device("cuda")), weights_dtype("auto", torch.device("cpu"))
    ('bfloat16', 'float32')
    """
    if dtype == "auto":
        return "float32" if device.type == "cpu" else "bfloat16"
    if dtype == "bfloat16_if_native":
        return "bfloat16" if device.type != "cpu" or native_bf16() else "float32"
    if dtype == "int8" and device.type != "cpu":
        raise ValueError("local backend: dtype 'int8' is for CPU; use bfloat16 on a GPU")
    return dtype


#: the half-precision dtypes a float32 checkpoint is kept converted for (CPU)
HALF_DTYPES = ("bfloat16", "float16")


def _stored_dtype(path: str) -> str | None:
    """The dtype a checkpoint folder's config says its weights are stored in."""
    try:
        config = json.loads((Path(path) / "config.json").read_text())
    except (OSError, ValueError):
        return None
    return config.get("dtype") or config.get("torch_dtype")


def _fingerprint(path: str) -> list:
    """Name, size and modification time of a checkpoint's weight files: a new checkpoint
    written to the same folder (base_model rerun, a new conversion) changes it."""
    files = sorted(Path(path).glob("*.safetensors")) + sorted(Path(path).glob("*.bin"))
    return [[f.name, (st := f.stat()).st_size, st.st_mtime_ns] for f in files]


def converted_dir(path: str, dtype: str) -> Path:
    """Where the ``dtype`` copy of the checkpoint at ``path`` is kept: one per (folder, dtype),
    replaced when the checkpoint changes, so copies do not pile up."""
    key = hashlib.sha256(f"{Path(path).resolve()}|{dtype}".encode()).hexdigest()[:16]
    return cache_dir() / "converted" / f"{Path(path).name}-{dtype}-{key}"


def _load_converted(path: str, dtype: str) -> Any:
    """The model at half precision, read from a half-size copy of the float32 checkpoint.

    Converting while loading reads every float32 page of the file into the process (the
    whole file is mapped: twice the half-precision model), in every stage that loads it;
    the copy is read instead. It is written on first use (a temporary folder, then a rename:
    a killed write leaves nothing half-done); a copy that cannot be written only costs the
    saving, and one whose record of its source is unreadable is written again.
    """
    target, source = converted_dir(path, dtype), _fingerprint(path)
    try:
        kept = json.loads((target / "source.json").read_text()) == source
    except (OSError, ValueError):
        kept = False
    if kept:
        return AutoModelForCausalLM.from_pretrained(target, dtype=getattr(torch, dtype))
    lm = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, dtype))
    try:
        with atomic_dir(target) as tmp:
            lm.save_pretrained(tmp)
            (tmp / "source.json").write_text(json.dumps(source))
    except OSError as err:  # a full disk, a read-only cache, a concurrent writer
        log.warning("local backend: no %s copy of %s kept (%s)", dtype, path, err)
    return lm


def load_model(
    path: str, model: str, dtype: str, device: torch.device, adapter: str | None
) -> tuple[Any, Any]:
    """The tokenizer and the model in eval mode on ``device``; ``model`` is the name the user
    gave (for errors), ``dtype`` 'auto', 'int8' (CPU) or a torch dtype's name."""
    dtype = weights_dtype(dtype, device)
    load_dtype = torch.float32 if dtype == "int8" else getattr(torch, dtype)
    try:
        tokenizer = AutoTokenizer.from_pretrained(path)
        if device.type == "cpu" and dtype in HALF_DTYPES and _stored_dtype(path) == "float32":
            lm = _load_converted(path, dtype)
        else:
            lm = AutoModelForCausalLM.from_pretrained(path, dtype=load_dtype)
    except (OSError, ValueError) as err:
        where = (
            "a folder" if Path(path).exists() else "a local folder nor in the Hugging Face cache"
        )
        built_in = ", ".join(map(repr, EMBEDDED_MODELS))
        raise ModelNotFoundError(
            f"local backend: cannot load model {model!r}: not {where} with a checkpoint "
            f"(nothing is downloaded on this machine); use {built_in} or a checkpoint path "
            f"({_first_line(err)})"
        ) from None
    if adapter:
        lm = merge_adapter(lm, adapter)
    if dtype == "int8":
        lm = quantize_int8(lm)
    lm.to(device).eval()
    return tokenizer, lm
