from __future__ import annotations

import pytest

from stages.models import Candidate
from stages.projection import ProjectionBudget
from tests.builders import candidate, projected


def _block(key: str, rank: int, content: str, source: str = "s.md") -> Candidate:
    """The candidate ranked `rank` (its score falls with the rank)."""
    return candidate(key, 1.0 / rank, content=content, source=source)



def test_repeated_evidence_key_projects_once() -> None:
    blocks = [_block("k1", 1, "a"), _block("k1", 2, "b"), _block("k2", 3, "c")]
    assert [p.document_id for p in projected(blocks, ProjectionBudget())] == ["k1", "k2"]


def test_max_items_drops_the_lowest_ranked() -> None:
    blocks = [_block(f"k{i}", i, "x") for i in range(1, 5)]
    assert [p.document_id for p in projected(blocks, ProjectionBudget(max_items=2))] == ["k1", "k2"]


def test_item_content_is_cut_to_the_per_item_budget() -> None:
    (item,) = projected([_block("k", 1, "abcdefgh")], ProjectionBudget(max_chars_per_item=3))
    assert item.content == "abc"


def test_total_budget_cuts_the_overflowing_item_and_drops_the_rest() -> None:
    blocks = [_block("k1", 1, "aaaa"), _block("k2", 2, "bbbb"), _block("k3", 3, "cccc")]
    items = projected(blocks, ProjectionBudget(max_chars=6))
    assert [(p.document_id, p.content) for p in items] == [("k1", "aaaa"), ("k2", "bb")]


def test_projection_follows_rank_not_input_order() -> None:
    blocks = [_block("second", 2, "b"), _block("first", 1, "a")]
    assert [p.document_id for p in projected(blocks, ProjectionBudget())] == ["first", "second"]


@pytest.mark.parametrize("field", ["max_items", "max_chars", "max_chars_per_item"])
def test_budget_below_one_names_the_setting(field: str) -> None:
    with pytest.raises(ValueError, match="projection." + field.replace("_", "-")):
        ProjectionBudget(**{field: 0})
