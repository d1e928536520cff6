"""base_model: materialise the embedded model as a plain checkpoint in models/base.

Every local model in params that says ``models/base`` (the default labeler, Refiner base and
Measurer) reads this folder. A configured real model (a vLLM server, Claude, a hub name on a
GPU machine) needs nothing here; the folder then holds only a note naming those models.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from stackelberg.io import atomic_dir
from stackelberg.llm.embedded import ensure_checkpoint
from stackelberg.params import ModelsParams, entry_models

BASE = "models/base"
#: every model role of params.models
ROLES = tuple(ModelsParams.model_fields)


def plan(ctx) -> list[dict]:
    return [{"label": "embedded"}]


def work(ctx, item) -> dict:
    models = ctx.params.models
    uses_base = [r for r in ROLES if any(m.model == BASE for m in entry_models(getattr(models, r)))]
    return {"uses_base": uses_base, "source": str(ensure_checkpoint()) if uses_base else None}


def finish(ctx, results) -> dict:
    res = results[0]
    target = ctx.path()
    note = {r: [m.model for m in entry_models(getattr(ctx.params.models, r))] for r in ROLES}
    with atomic_dir(target) as tmp:
        if res["source"]:
            shutil.copytree(res["source"], tmp, dirs_exist_ok=True)
        (tmp / "stackelberg-models.json").write_text(json.dumps(note, indent=1) + "\n")
    size = sum(f.stat().st_size for f in Path(target).rglob("*") if f.is_file())
    return {"megabytes": size / 2**20, "roles_on_base": len(res["uses_base"])}
