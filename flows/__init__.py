"""The pipeline's orchestration: Prefect flows over the stages, DVC's graph, MLflow runs.

A workspace (``flows.workspace``) holds a copy of the project's code; the installed package
points at the checkout it was installed from. The library beside this package goes first on
the path of this process and of its children (launched training, Dask and Ray workers), so a
workspace runs the code it copied, the code its dvc.lock hashed, not the checkout's as it is
being edited.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

_SRC = str(Path(__file__).resolve().parents[1] / "src")
if Path(_SRC).is_dir() and sys.path[:1] != [_SRC]:
    sys.path.insert(0, _SRC)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (_SRC, os.environ.get("PYTHONPATH", "")) if p
    )
