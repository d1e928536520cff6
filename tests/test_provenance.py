"""Where a run came from: the project's commit (marked when tracked files changed) and the
params file, recorded in a workspace when it is made and read back from MLflow."""

from __future__ import annotations

import json
import subprocess

import pytest

from stackelberg.provenance import COMMIT_TAG, PARAMS_TAG, SOURCE_FILE, project_source, source_tags


def git(root, *args):
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def repo(tmp_path):
    git(tmp_path, "init", "-q")
    (tmp_path / "a.txt").write_text("one\n")
    git(tmp_path, "add", "a.txt")
    git(tmp_path, "commit", "-q", "-m", "first")
    return tmp_path


def head(root) -> str:
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True
    ).stdout.strip()


def test_the_commit_is_marked_when_tracked_files_changed(repo):
    assert project_source(repo) == {"commit": head(repo), "params": "params.yaml"}
    (repo / "new.txt").write_text("untracked files do not count\n")
    assert project_source(repo)["commit"] == head(repo)
    (repo / "a.txt").write_text("two\n")
    assert project_source(repo, "configs/study.yaml") == {
        "commit": f"{head(repo)}+changes",
        "params": "configs/study.yaml",
    }


def test_outside_git_the_commit_is_unknown(tmp_path):
    assert source_tags(tmp_path) == {COMMIT_TAG: "unknown", PARAMS_TAG: "params.yaml"}


def test_a_workspace_record_wins_over_its_own_git(repo):
    (repo / SOURCE_FILE).write_text(json.dumps({"commit": "abc", "params": "configs/x.yaml"}))
    assert source_tags(repo) == {COMMIT_TAG: "abc", PARAMS_TAG: "configs/x.yaml"}


def test_a_workspace_records_the_project_it_was_copied_from(tmp_path):
    from flows.workspace import ROOT, make_workspace

    root = make_workspace(tmp_path / "ws", "games: [werewolf]\n", "configs/study.yaml")
    recorded = json.loads((root / SOURCE_FILE).read_text())
    assert recorded == project_source(ROOT, "configs/study.yaml")
    assert source_tags(root)[PARAMS_TAG] == "configs/study.yaml"
    log = subprocess.run(
        ["git", "log", "-1", "--format=%s"], cwd=root, capture_output=True, text=True
    ).stdout
    assert recorded["commit"] in log


def test_a_workspace_runs_the_library_it_copied_not_the_checkouts(tmp_path):
    """Its entry points (``python -m flows.X``) and their children import the workspace's
    own src, the code its dvc.lock hashed, whatever the installed package points at."""
    import sys

    from flows.workspace import make_workspace

    root = make_workspace(tmp_path / "ws", "games: [werewolf]\n", "configs/study.yaml")
    probe = (
        "import flows, os, subprocess, sys, stackelberg; print(stackelberg.__file__); "
        "print(subprocess.run([sys.executable, '-c', 'import stackelberg; "
        "print(stackelberg.__file__)'], capture_output=True, text=True).stdout.strip())"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=root, capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == [str(root / "src/stackelberg/__init__.py")] * 2
