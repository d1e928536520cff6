"""Where a run came from: the project's commit and the params file, as MLflow run tags.

A table read back from MLflow (evaluation/mlflow_runs.py, the README's Results) names what
produced it. In a workspace (flows/workspace.py: the study runs in a copy of the code) the
commit is the project's, recorded in ``SOURCE_FILE`` when the copy was made.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

#: a workspace's record of the project it was copied from (flows/workspace.py)
SOURCE_FILE = "SOURCE.json"
#: the tags ``source_tags`` sets on every run
COMMIT_TAG, PARAMS_TAG = "source.commit", "source.params"


def _git_output(args: list[str], root: Path) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
    except OSError:  # no git
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def project_source(root: Path, params: str = "params.yaml") -> dict[str, str]:
    """The commit of the project at ``root`` (``+changes`` where tracked files differ from
    it; ``unknown`` outside git) and the params file a run there reads."""
    commit = _git_output(["rev-parse", "HEAD"], root) or "unknown"
    if commit != "unknown" and _git_output(["status", "--porcelain", "--untracked-files=no"], root):
        commit += "+changes"
    return {"commit": commit, "params": params}


def source_tags(root: Path | None = None) -> dict[str, str]:
    """The run tags of where a run in ``root`` (default: here) came from: a workspace's
    recorded source, else the project's own commit and params.yaml."""
    root = Path.cwd() if root is None else root
    recorded = root / SOURCE_FILE
    source = json.loads(recorded.read_text()) if recorded.is_file() else project_source(root)
    return {COMMIT_TAG: source["commit"], PARAMS_TAG: source["params"]}
