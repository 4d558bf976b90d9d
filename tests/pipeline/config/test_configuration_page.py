"""docs/configuration.md is what the settings model generates: every key, its default and
bounds as declared, and a meaning for each."""

from __future__ import annotations

from pathlib import Path

from pipeline.config import reference
from pipeline.config.loader import load_settings

ROOT = Path(__file__).resolve().parents[3]


def test_the_page_is_what_the_model_generates() -> None:
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert page == reference.page(), (
        "docs/configuration.md is stale: python -m pipeline.config.reference > "
        "docs/configuration.md")


def test_every_key_has_a_meaning_and_every_meaning_a_key() -> None:
    keys = [row.key for row in reference.rows()]
    assert [key for key in keys if not reference.MEANINGS.get(key)] == []
    assert set(reference.MEANINGS) - set(keys) == set()


# a step that is on when its section is given: the section as given with only what it needs
SECTION_GIVEN = {"rag.mmr.": ["rag.mmr={}"], "rag.rerank.": ["rag.rerank.model=folder"]}


def test_every_key_of_the_page_is_a_setting_whose_default_is_the_one_shown() -> None:
    for row in reference.rows():
        given = next((v for k, v in SECTION_GIVEN.items() if row.key.startswith(k)), [])
        if row.default == "required":
            assert given, row
            continue
        shown = "null" if row.default == "unset" else row.default.strip("`")
        assert (load_settings(overrides=[*given, f"{row.key}={shown}"])
                == load_settings(overrides=given)), row


def test_a_bound_appears_as_declared() -> None:
    row = {r.key: r for r in reference.rows()}["search.embedded.hnsw.m"]
    assert row.bounds == "≥ 4, ≤ 256" and row.default == "`32`"
