"""The docs stay true to the code: every dataset column is described, nothing points outside
the repository, every relative link in docs/ and the README resolves (anchors included),
the params keys, files and commands they name exist, the README stays a short guide, and
every figure of docs/performance.md has its command."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from stackelberg.cli import build_parser
from stackelberg.datasets import SCHEMAS
from stackelberg.params import explain

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [ROOT / "README.md", *DOCS]
README_MAX_LINES = 320
PERFORMANCE_MAX_ROWS = 20
PERFORMANCE_MAX_ROW_CHARS = 400


def prose(page: Path) -> str:
    """The page without its fenced code blocks (a `# comment` there is no heading)."""
    return re.sub(r"^```.*?^```", "", page.read_text(), flags=re.M | re.S)


def anchors(page: Path) -> set[str]:
    """The heading anchors GitHub gives a page: lower case, punctuation dropped, spaces to
    hyphens, a repeated anchor numbered -1, -2, ..."""
    seen: dict[str, int] = {}
    out = set()
    for title in re.findall(r"^#{1,6} +(.+?) *#* *$", prose(page), re.M):
        slug = re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def links(page: Path) -> list[str]:
    return re.findall(r"\]\(([^)\s]+)\)", prose(page))


@pytest.mark.parametrize("dataset", sorted(SCHEMAS))
def test_every_dataset_column_is_described(dataset):
    text = (ROOT / "docs/records.md").read_text()
    section = text.split(f"(`{dataset}`)", 1)[1].split("\n### ", 1)[0]
    inherited = "Every column of `instances`" in section
    described = set(re.findall(r"^\| `(\w+)` \|", section, re.M))
    if inherited:
        described |= set(SCHEMAS["instances"])
    assert set(SCHEMAS[dataset]) - described == set(), f"undescribed columns of {dataset}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_resolve(page):
    relative = [t for t in links(page) if not re.match(r"[a-z]+:", t)]
    for target in relative:
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        assert file.exists(), f"{page.name} links to missing {path}"
        if anchor and file.suffix == ".md":
            assert anchor in anchors(file), f"{page.name} links to missing {target}"


def test_the_anchor_rule_reads_headings_as_github_does(tmp_path):
    page = tmp_path / "p.md"
    page.write_text(
        "# The paper's setup\n## rl_ins and its policy\n## A, b\n## A, b\n```\n# no\n```\n"
    )
    assert anchors(page) == {"the-papers-setup", "rl_ins-and-its-policy", "a-b", "a-b-1"}


def test_the_readme_is_a_short_guide():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"
    assert max(map(len, lines)) <= 300, "a README line (a table row?) over 300 characters"


def test_every_performance_figure_has_its_command():
    rows = [
        line
        for line in (ROOT / "docs/performance.md").read_text().splitlines()
        if line.startswith("| ") and not line.startswith("| what |")
    ]
    assert 0 < len(rows) <= PERFORMANCE_MAX_ROWS
    for row in rows:
        assert len(row) <= PERFORMANCE_MAX_ROW_CHARS, f"a long row: {row[:60]}"
        what, command, measured = [c.strip() for c in row.strip("|").split(" | ")]
        assert what and measured and "`" in command, f"a row without its command: {what}"


PARAMS_KEYS = {key for key, _, _ in explain()}
SECTIONS = {key for key in PARAMS_KEYS if "." not in key}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_named_params_keys_exist(page):
    """`section.key` in backticks (also `section.key: value`) is a params key."""
    for key in re.findall(r"`([a-z_]+(?:\.[a-z_]+)+)(?:[:=][^`]*)?`", page.read_text()):
        if key.split(".")[0] not in SECTIONS:
            continue
        key = re.sub(r"^game_overrides\.\w+\.?", "", key) or "game_overrides"
        key = re.sub(
            r"^models\.(labeler|refiner|measurer|player|unseen_follower)\.", "models.<role>.", key
        )
        assert key in PARAMS_KEYS, f"{page.name} names the params key {key}, which is not one"


@pytest.mark.parametrize(
    "page", [p for p in PAGES if p.name != "performance-log.md"], ids=lambda p: p.name
)
def test_named_files_and_commands_exist(page):
    """Project files, make targets, stage modules and `stackelberg` subcommands the docs name
    (the performance log is history: it may name what has since gone)."""
    text = page.read_text()
    tops = r"(?:bench|scripts|configs|stages|flows|tests|src/stackelberg)"
    for path in set(re.findall(rf"\b({tops}/[\w./-]*\w)(?![\w{{])", text)):
        assert (ROOT / path).exists(), f"{page.name} names {path}, which is not in the project"
    targets = set(re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text(), re.M))
    for target in re.findall(r"(?:^|`)make (\w+)", text, re.M):
        assert target in targets, f"{page.name} names `make {target}`"
    for module in re.findall(r"python -m ((?:flows|stages)\.\w+)", text):
        assert (ROOT / (module.replace(".", "/") + ".py")).exists(), module
    commands = subcommands()
    for command, rest in re.findall(r"(?:^|`)stackelberg (\w+)([^`#\n]*)", text, re.M):
        assert command in commands, f"{page.name} names `stackelberg {command}`"
        for flag in re.findall(r"(?<!\S)(--[\w-]+)", rest):
            assert flag in commands[command], f"{page.name}: `stackelberg {command} {flag}`"


def subcommands() -> dict[str, set[str]]:
    """Each `stackelberg` subcommand with its options (a nested subcommand's too)."""

    def options(parser: argparse.ArgumentParser) -> set[str]:
        found = {s for a in parser._actions for s in a.option_strings}
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                found |= {s for p in action.choices.values() for s in options(p)}
        return found

    top = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {name: options(parser) for name, parser in top.choices.items()}


def test_nothing_points_outside_the_repository():
    outside = re.compile(r"\b(RULES|DESIGN|PAPER|STACK)\.md\b")
    files = [
        p
        for top in ("src", "stages", "flows", "configs", "docs")
        for p in (ROOT / top).rglob("*")
        if p.suffix in (".py", ".yaml", ".md") and "egg-info" not in str(p)
    ]
    found = [
        str(p.relative_to(ROOT))
        for p in [*files, ROOT / "params.yaml", ROOT / "README.md"]
        if outside.search(p.read_text())
    ]
    assert not found, f"pointers to files that are not in the repository: {found}"
