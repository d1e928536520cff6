"""The library imports downward only, in the layer order docs/architecture.md draws, and no
module imports itself back through others. Read from the code, imports inside functions
included: a lazy import that goes upward ties the layers together as much as any other."""

from __future__ import annotations

import re

from module_imports import ROOT, SRC, imported, module_file

LIBRARY = SRC / "stackelberg"


def doc_layers() -> dict[str, int]:
    """Each part of src/stackelberg the doc's Layers drawing lists (``io.py``, ``games/``),
    with its place in the list: a part may import only the parts listed before it."""
    drawing = (ROOT / "docs/architecture.md").read_text().split("## Layers", 1)[1]
    drawing = drawing.split("```", 2)[1]
    order: dict[str, int] = {}
    for line in drawing.splitlines():
        listed = re.match(r"  (\w+)(?:\.py|/)\s", line)  # a wrapped line is indented further
        if listed:
            order.setdefault(listed.group(1), len(order))
    return order


def part(module: str) -> str:
    """The part of the library a module belongs to: ``stackelberg.llm.local.model`` -> llm."""
    return module.split(".")[1] if module.count(".") else "__init__"


def library_imports() -> dict[str, list[str]]:
    """Every library module and the library modules it imports."""
    out: dict[str, list[str]] = {}
    for path in sorted(LIBRARY.rglob("*.py")):
        name = ".".join(path.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")
        out[name] = [m for m in imported(path) if m.split(".")[0] == "stackelberg"]
    return out


def upward_imports(imports: dict[str, list[str]], order: dict[str, int]) -> list[str]:
    """The imports of a part listed later than the importer (the package root is below all)."""
    rank = {**order, "__init__": -1}
    return [
        f"{module} imports {target}"
        for module, targets in imports.items()
        for target in targets
        if rank[part(target)] > rank[part(module)]
    ]


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one file (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def file_graph() -> dict[str, set[str]]:
    """Library file -> the library files it imports; a package importing its own modules
    by name (``importlib``) counts as importing them, not itself."""
    graph: dict[str, set[str]] = {}
    for module, targets in library_imports().items():
        here = str(module_file(module).relative_to(ROOT))
        files = {module_file(t) for t in targets} - {None}
        graph[here] = {str(f.relative_to(ROOT)) for f in files} - {here}
    return graph


def test_every_part_of_the_library_has_its_layer_in_the_doc():
    parts = {part(m) for m in library_imports()} - {"__init__"}
    assert parts == set(doc_layers()), "docs/architecture.md's Layers list and src/ differ"


def test_the_library_imports_only_downward():
    upward = upward_imports(library_imports(), doc_layers())
    assert not upward, "imports against docs/architecture.md's layer order:\n" + "\n".join(upward)


def test_no_library_module_imports_itself_back():
    cycles = import_cycles(file_graph())
    assert not cycles, f"import cycles: {cycles}"


def test_the_checks_catch_an_upward_import_and_a_cycle():
    order = {"settings": 0, "games": 1, "llm": 2}
    imports = {
        "stackelberg.games.base": ["stackelberg.settings", "stackelberg.games.registry"],
        "stackelberg.llm.base": ["stackelberg.games.base"],
        "stackelberg.games.registry": ["stackelberg.llm.base"],  # lazy or not: upward
    }
    assert upward_imports(imports, order) == [
        "stackelberg.games.registry imports stackelberg.llm.base"
    ]
    assert upward_imports({"stackelberg": ["stackelberg.games"]}, order)  # the root is below
    graph = {"a.py": {"b.py"}, "b.py": {"c.py"}, "c.py": {"a.py"}, "d.py": {"a.py", "d.py"}}
    assert import_cycles(graph) == [["a.py", "b.py", "c.py"]]
    assert doc_layers()["settings"] == 0 and doc_layers()["cli"] == len(doc_layers()) - 1


def test_the_walk_sees_imports_inside_functions():
    # training/grpo.py imports its trainer (and TRL) only when it trains
    assert "stackelberg.training.trainer" in library_imports()["stackelberg.training.grpo"]
