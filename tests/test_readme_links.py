"""The links of the README and of docs/ lead to files of this repository (a link outside breaks
in any clone)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_relative_link_of_the_readme_names_a_file_of_the_repository() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = [t for t in re.findall(r"\]\(([^)\s]+)\)", readme)
               if not t.startswith(("http://", "https://", "#"))]
    assert targets, "the README links to no file of its own"
    for target in targets:
        path = (ROOT / target.split("#")[0]).resolve()
        assert path.is_relative_to(ROOT) and path.exists(), target


def test_every_relative_link_of_the_docs_names_a_file_of_the_repository() -> None:
    for page in sorted((ROOT / "docs").glob("*.md")):
        text = page.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if target.startswith(("http://", "https://", "#")):
                continue
            path = (page.parent / target.split("#")[0]).resolve()
            assert path.is_relative_to(ROOT) and path.exists(), f"{page.name}: {target}"
