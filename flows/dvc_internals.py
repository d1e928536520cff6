"""The one place that touches DVC's private serialization: how ``dvc commit`` reads dvc.lock.

DVC rewrites dvc.lock after each stage by parsing it with ruamel's round-trip loader (pure
Python, kept so that comments and quoting survive) and dumping it back. dvc.lock is written
by DVC alone and holds no comments, so a plain parse gives the same file: that parse uses
ruamel's C loader and takes ~1/30 of the time, which for a 75 KB lock is about half of each
stage's ``dvc commit`` (``bench/orchestration.py``). ``tests/pipeline/test_dvc_lock.py``
checks that the lock is byte for byte what DVC writes on its own.

Only the lock is read this way: the pipeline commits with ``update_pipeline=False`` (DVC's
``commit``), so dvc.yaml, which has comments, is never rewritten.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from dvc.utils.serialize import _yaml

from flows.errors import PipelineError

if not callable(getattr(_yaml, "parse_yaml_for_update", None)) or not callable(
    getattr(_yaml, "parse_yaml", None)
):
    from dvc import __version__ as dvc_version

    raise PipelineError(
        f"DVC {dvc_version} has no dvc.utils.serialize._yaml.parse_yaml_for_update, which "
        "the pipeline's dvc.lock writing wraps; install DVC 3 (the range in pyproject.toml)"
    )


@contextmanager
def plain_lock_parse() -> Iterator[None]:
    """Within: DVC's read-modify-write of its YAML files parses them with its own plain
    parse (ruamel's C loader where installed); for ``dvc commit`` of pipeline stages that
    is dvc.lock alone."""
    original = _yaml.parse_yaml_for_update
    _yaml.parse_yaml_for_update = _yaml.parse_yaml
    try:
        yield
    finally:
        _yaml.parse_yaml_for_update = original
