import pytest

from stackelberg.io import atomic_writer


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
