import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from stackelberg.io import atomic_dir, atomic_writer, recover_dir, replace_dir


def test_atomic_writer_replaces_only_on_success(tmp_path):
    target = tmp_path / "sub" / "out.jsonl"
    with atomic_writer(target) as fh:
        fh.write("one\n")
    assert target.read_text() == "one\n"

    with pytest.raises(RuntimeError), atomic_writer(target) as fh:
        fh.write("half")
        raise RuntimeError("killed")
    assert target.read_text() == "one\n"
    assert [p.name for p in target.parent.iterdir()] == ["out.jsonl"]


# ---- replacing a folder ----------------------------------------------------------------------


def folder(path, **files):
    path.mkdir(parents=True)
    for name, text in files.items():
        (path / name).write_text(text)
    return path


def contents(path):
    return {p.name: p.read_text() for p in sorted(path.iterdir())}


def test_atomic_dir_replaces_the_folder_only_on_success(tmp_path):
    target = tmp_path / "out"
    for version in ("v1", "v2"):
        with atomic_dir(target) as staged:
            assert staged.parent == tmp_path and staged != target
            (staged / "a.txt").write_text(version)
        assert contents(target) == {"a.txt": version}
    with pytest.raises(RuntimeError), atomic_dir(target) as staged:
        (staged / "a.txt").write_text("half")
        raise RuntimeError("killed")
    assert contents(target) == {"a.txt": "v2"}
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # nothing left beside it


def test_a_failure_between_the_renames_puts_the_old_folder_back(tmp_path, monkeypatch):
    import stackelberg.io as io

    target = folder(tmp_path / "out", **{"a.txt": "old"})
    new = folder(tmp_path / ".out.new", **{"a.txt": "new"})
    renames = []
    real = os.rename

    def rename(src, dst):
        renames.append((Path(src).name, Path(dst).name))
        if Path(src) == new:
            raise OSError("disk gone")
        real(src, dst)

    monkeypatch.setattr(io.os, "rename", rename)
    with pytest.raises(OSError, match="disk gone"):
        replace_dir(new, target)
    assert renames[0] == ("out", ".out.replaced")  # the old folder had been moved aside
    assert contents(target) == {"a.txt": "old"}
    assert sorted(p.name for p in tmp_path.iterdir()) == [".out.new", "out"]


# A process that replaces tmp/out and is killed (SIGKILL: no cleanup runs) at one moment.
KILLED = """
import os, shutil, signal, sys
from pathlib import Path
import stackelberg.io as io

tmp, moment = Path(sys.argv[1]), sys.argv[2]
real_rename, real_rmtree = os.rename, shutil.rmtree

def rename(src, dst):
    if moment == "before the new is in" and Path(src).name.startswith(".out.new"):
        os.kill(os.getpid(), signal.SIGKILL)
    real_rename(src, dst)

def rmtree(path, *args, **kwargs):
    if moment == "before the old is deleted" and Path(path).name == ".out.replaced":
        os.kill(os.getpid(), signal.SIGKILL)
    real_rmtree(path, *args, **kwargs)

io.os.rename, io.shutil.rmtree = rename, rmtree
with io.atomic_dir(tmp / "out") as staged:
    (staged / "a.txt").write_text("new")
"""


@pytest.mark.parametrize(
    ("moment", "left"), [("before the new is in", "old"), ("before the old is deleted", "new")]
)
def test_a_kill_at_any_moment_leaves_the_old_folder_or_the_new(tmp_path, moment, left):
    folder(tmp_path / "out", **{"a.txt": "old"})
    done = subprocess.run([sys.executable, "-c", KILLED, str(tmp_path), moment], check=False)
    assert done.returncode == -signal.SIGKILL
    assert os.path.lexists(tmp_path / ".out.replaced")  # killed with the old copy aside
    recover_dir(tmp_path / "out")  # what the next replacement does first
    assert contents(tmp_path / "out") == {"a.txt": left}
    assert not os.path.lexists(tmp_path / ".out.replaced")


def test_the_next_replacement_restores_a_killed_ones_old_folder_first(tmp_path):
    folder(tmp_path / ".out.replaced", **{"a.txt": "old"})  # killed before the new was in
    with atomic_dir(tmp_path / "out") as staged:
        assert contents(tmp_path / "out") == {"a.txt": "old"}  # readable meanwhile
        (staged / "a.txt").write_text("new")
    assert contents(tmp_path / "out") == {"a.txt": "new"}
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_a_folder_replaces_a_missing_one(tmp_path):
    new = folder(tmp_path / "staged", **{"a.txt": "new"})
    assert replace_dir(new, tmp_path / "out") == tmp_path / "out"
    assert contents(tmp_path / "out") == {"a.txt": "new"}
    assert [p.name for p in tmp_path.iterdir()] == ["out"]
