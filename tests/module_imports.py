"""The project modules a source file imports, read from its code (also inside functions):
the walk that keeps dvc.yaml's deps complete and the library's layers in order."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"


def module_file(name: str) -> Path | None:
    parts = name.split(".")
    if parts[0] == "stackelberg":
        base = SRC.joinpath(*parts)
    elif parts[0] in ("stages", "flows"):
        base = ROOT.joinpath(*parts)
    else:
        return None
    if base.with_suffix(".py").exists():
        return base.with_suffix(".py")
    if (base / "__init__.py").exists():
        return base / "__init__.py"
    return None


#: How a package imports its modules by name (a game's prompts, its scripted agent): the
#: package then runs any of its modules.
BY_NAME = 'importlib.import_module(f"{__name__}.'


def imported(path: Path) -> list[str]:
    """Project modules that ``path`` imports anywhere (also inside functions)."""
    return list(_imported(path))


@functools.cache
def _imported(path: Path) -> tuple[str, ...]:
    """``imported``, each file read once a run: the walks of every stage and of the layers
    pass over the same files again and again."""
    rel = path.relative_to(SRC if path.is_relative_to(SRC) else ROOT).with_suffix("")
    package = list(rel.parts[:-1])
    out: list[str] = []
    if path.name == "__init__.py" and BY_NAME in path.read_text():
        out += [".".join([*package, m.stem]) for m in path.parent.glob("*.py")]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            for alias in node.names:  # `from pkg import submodule` runs the submodule
                sub = f"{mod}.{alias.name}"
                out.append(sub if module_file(sub) not in (None, module_file(mod)) else mod)
    return tuple(out)
