"""The benchmark scripts run as documented, `python bench/X.py`, from the project's root."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p for p in (ROOT / "bench").glob("*.py") if not p.name.startswith("_"))
LAYERS = ("flows", "stages")  # above the installed package: importable from the root only


def top_level_imports(path: Path) -> list[str]:
    """The modules a script imports at its top level, in order."""
    names = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    return names


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_a_script_that_imports_flows_or_stages_puts_the_root_on_the_path_first(script):
    names = top_level_imports(script)
    layered = [i for i, n in enumerate(names) if n.split(".")[0] in LAYERS]
    if layered:
        assert "_project_root" in names, f"{script.name} imports {names[layered[0]]}"
        assert names.index("_project_root") < layered[0]


def test_a_script_that_imports_stages_runs_from_the_root():
    done = subprocess.run(
        [sys.executable, "bench/training_reward.py", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "--workspace" in done.stdout
