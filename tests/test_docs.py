"""The docs stay true to the code: every dataset column is described, nothing points outside
the repository, and every relative link in docs/ and the README resolves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from stackelberg.datasets import SCHEMAS

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted((ROOT / "docs").glob("*.md"))


@pytest.mark.parametrize("dataset", sorted(SCHEMAS))
def test_every_dataset_column_is_described(dataset):
    text = (ROOT / "docs/records.md").read_text()
    section = text.split(f"(`{dataset}`)", 1)[1].split("\n### ", 1)[0]
    inherited = "Every column of `instances`" in section
    described = set(re.findall(r"^\| `(\w+)` \|", section, re.M))
    if inherited:
        described |= set(SCHEMAS["instances"])
    assert set(SCHEMAS[dataset]) - described == set(), f"undescribed columns of {dataset}"


@pytest.mark.parametrize("page", [ROOT / "README.md", *DOCS], ids=lambda p: p.name)
def test_relative_links_resolve(page):
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text()):
        assert (page.parent / target).exists(), f"{page.name} links to missing {target}"


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
