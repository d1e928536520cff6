"""The pipeline's ``dvc commit`` (dvc.lock parsed plainly, ``flows.dvc_internals``) writes the
lock DVC writes with its own comment-keeping parse, byte for byte, and leaves dvc.yaml alone."""

from __future__ import annotations

from contextlib import chdir, nullcontext
from pathlib import Path

import pytest
from dvc.repo import Repo
from dvc.utils.serialize import _yaml

from flows.dvc_internals import plain_lock_parse
from flows.errors import PipelineError

DVC_YAML = """\
# a comment that dvc.yaml keeps
stages:
  one:
    cmd: python -c "print('one')"
    deps: [in.txt]
    params: [train]
    outs: [out1]
  two:
    cmd: python -c "print('two')"
    deps: [out1]
    params: [train.learning_rate, eval]
    outs: [out2.txt]
"""

# Values whose text a careless dump would change: a string that reads as a number, floats
# in exponent form, null, booleans, a long string, nesting and lists.
PARAMS = """\
train:
  learning_rate: 1.0e-06
  schema: '2.0'
  name: "0123"
  ratio: 0.75
  flags: [true, false, null]
  note: a long sentence that goes well past eighty characters, so that the dumper must decide where it wraps
eval:
  seeds: [1, 2, 3]
  nested: {a: {b: 1.5e+20}}
"""


def _project(root: Path) -> Path:
    root.mkdir()
    (root / "dvc.yaml").write_text(DVC_YAML)
    (root / "params.yaml").write_text(PARAMS)
    (root / "in.txt").write_text("input\n")
    (root / "out1").mkdir()
    (root / "out1" / "part").write_text("1\n")
    (root / "out2.txt").write_text("2\n")
    Repo.init(str(root), no_scm=True)
    return root


def _commit_all(root: Path, plain: bool) -> None:
    """Commit both stages, change an output and commit its stage again: every commit after
    the first reads a lock that holds the other stage."""
    for name in ("one", "two", "one"):
        if name == "one":
            (root / "out1" / "part").write_text(f"{name} {(root / 'dvc.lock').exists()}\n")
        with chdir(root), Repo(".") as repo, plain_lock_parse() if plain else nullcontext():
            repo.commit(name, force=True)


def test_plain_parse_writes_dvcs_own_lock(tmp_path):
    own = _project(tmp_path / "own")
    plain = _project(tmp_path / "plain")
    _commit_all(own, plain=False)
    _commit_all(plain, plain=True)
    lock = (plain / "dvc.lock").read_text()
    assert lock == (own / "dvc.lock").read_text()
    assert "schema: '2.0'" in lock and "name: '0123'" in lock  # strings stay strings
    assert (plain / "dvc.yaml").read_text() == DVC_YAML
    with chdir(plain), Repo(".") as repo:  # DVC reads back what it wrote
        assert not repo.status(targets=["one"], with_deps=False)
        (changed,) = repo.status(targets=["two"], with_deps=False).values()
        assert changed == [{"changed deps": {"out1": "modified"}}]  # one's output, redone


def test_the_patch_is_undone(tmp_path):
    original = _yaml.parse_yaml_for_update
    root = _project(tmp_path / "p")
    with chdir(root), Repo(".") as repo, plain_lock_parse():
        assert _yaml.parse_yaml_for_update is not original
        repo.commit("one", force=True)
    assert _yaml.parse_yaml_for_update is original


def test_a_dvc_without_the_wrapped_parse_is_refused(monkeypatch):
    import importlib

    import flows.dvc_internals as internals

    monkeypatch.delattr(_yaml, "parse_yaml_for_update")
    with pytest.raises(PipelineError, match=r"^DVC \S+ has no .*install DVC 3"):
        importlib.reload(internals)
