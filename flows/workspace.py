"""A run of the pipeline on another params file, in a folder of its own (a workspace).

dvc.yaml reads params.yaml, so a second configuration (the study, a test's micro params)
runs in a copy of the project's code with that file as its params.yaml, in its own git and
DVC repository: its data, models, dvc.lock and reports stay apart from the default's, and
a rerun after a kill or a code change runs only what is stale there. The copy is refreshed
on every call; what the stages wrote is kept.

    python -m flows.workspace runs/study configs/study.yaml   # make or refresh, then
    cd runs/study && python -m flows.pipeline
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

from stackelberg.provenance import SOURCE_FILE, project_source

ROOT = Path(__file__).resolve().parents[1]
#: what a workspace holds of the project: the code the stages run and the graph
CODE = ("stages", "flows", "src", "configs")
FILES = ("dvc.yaml", ".dvcignore")
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")


def _git(args: list[str], root: Path) -> None:
    subprocess.run(
        ["git", "-c", "user.name=stackelberg", "-c", "user.email=run@stackelberg", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


def make_workspace(root: str | Path, params: str, params_name: str = "params.yaml") -> Path:
    """Copy the code and ``params`` (the params.yaml text, from the file ``params_name``)
    into ``root``, a git and DVC repository (made on first use), with a record of the
    project's commit (``SOURCE_FILE``, read by the MLflow tags), and commit the copy when it
    changed."""
    root = Path(root).resolve()
    root.mkdir(parents=True, exist_ok=True)
    for name in CODE:
        shutil.rmtree(root / name, ignore_errors=True)
        shutil.copytree(ROOT / name, root / name, ignore=_IGNORE)
    for name in FILES:
        shutil.copy(ROOT / name, root / name)
    (root / "params.yaml").write_text(params)
    source = project_source(ROOT, params_name)
    (root / SOURCE_FILE).write_text(json.dumps(source, indent=1) + "\n")
    if not (root / ".git").exists():
        _git(["init", "-q"], root)
    if not (root / ".dvc").exists():
        subprocess.run(["dvc", "init", "-q"], cwd=root, check=True, capture_output=True)
    _git(["add", "-A", *CODE, *FILES, "params.yaml", SOURCE_FILE, ".dvc"], root)
    message = f"the project's code at {source['commit']} and {params_name}"
    _git(["commit", "-q", "--allow-empty", "-m", message], root)
    return root


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", help="the workspace (made on first use)")
    parser.add_argument("params", help="the params file it runs (its params.yaml)")
    args = parser.parse_args(argv)
    params = Path(args.params)
    if not params.is_file():
        print(f"workspace: {params}: no such params file", file=sys.stderr)
        return 2
    from stackelberg.params import ParamsError, load_params

    try:
        load_params(params)  # refused here, in one line, before anything is copied
        text = resolved_text(params)
    except ParamsError as err:
        print(f"workspace: {params}: {err}", file=sys.stderr)
        return 2
    print(make_workspace(args.folder, text, args.params))
    return 0


def resolved_text(path: Path) -> str:
    """The params.yaml a workspace runs: the file's text as it is (its comments kept), or,
    where it extends another file, every section resolved (DVC reads params.yaml alone)."""
    import yaml

    from stackelberg.params import EXTENDS, read_params

    text = path.read_text()
    if EXTENDS not in (yaml.safe_load(text) or {}):
        return text
    header = f"# {path}, resolved over the file it {EXTENDS} (flows.workspace); edit that file\n"
    return header + yaml.safe_dump(read_params(path), sort_keys=False, width=100)


if __name__ == "__main__":
    raise SystemExit(main())
