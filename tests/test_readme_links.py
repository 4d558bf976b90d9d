"""The links of the README and of docs/ lead to files of this repository (a link outside breaks
in any clone), and a link to a section names a heading of its page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return [t for t in re.findall(r"\]\(([^)\s]+)\)", text)
            if not t.startswith(("http://", "https://"))]


def _anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the page's headings."""
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    headings = re.findall(r"^#+\s+(.+)$", text, flags=re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_names_a_file_of_the_repository(page: Path) -> None:
    for target in _links(page):
        name, _, anchor = target.partition("#")
        path = (page.parent / name).resolve() if name else page
        assert path.is_relative_to(ROOT) and path.exists(), f"{page.name}: {target}"
        if anchor and path.suffix == ".md":
            assert anchor in _anchors(path), f"{page.name}: {target}: no such heading"


def test_the_readme_is_a_landing_page_that_links_every_doc() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250
    linked = {(ROOT / t.partition("#")[0]).resolve() for t in _links(ROOT / "README.md")}
    for page in sorted((ROOT / "docs").glob("*.md")):
        assert page.resolve() in linked, f"the README does not link {page.name}"
