from __future__ import annotations

import pytest

from stages.identity import (
    FALLBACK_IDENTITY,
    IDENTITY_CONFLICT,
    INVALID_CHUNK_INDEX,
    evidence_key,
)
from tests.builders import candidate_of, normalized, recalled


def _counting() -> tuple[list[str], object]:
    seen: list[str] = []
    return seen, seen.append


def test_numeric_doc_id_is_turned_into_its_string() -> None:
    assert candidate_of(recalled(docId=42, chunkIndex=0)).evidence_key == "42#chunk-0"


@pytest.mark.parametrize("blank", ["", "   ", None, True])
def test_blank_or_non_text_doc_id_counts_as_absent(blank: object) -> None:
    candidate = candidate_of(recalled("v9", docId=blank, chunkIndex=1))
    assert candidate.doc_id is None
    assert candidate.evidence_key == "vector:v9"


@pytest.mark.parametrize("value, expected", [(0, 0), (3, 3), ("2", 2), (2.0, 2), ("17", 17)])
def test_chunk_index_accepts_exact_non_negative_integers(value: object, expected: int) -> None:
    assert candidate_of(recalled(docId="d", chunkIndex=value)).chunk_index == expected


@pytest.mark.parametrize("value", [-1, 1.5, "abc", True, None, "-2", "1.0", float("nan"), [1]])
def test_invalid_chunk_index_counts_as_absent_and_is_counted(value: object) -> None:
    seen, report = _counting()
    candidate = candidate_of(recalled("v1", docId="d", chunkIndex=value), report)  # type: ignore[arg-type]
    assert candidate.chunk_index is None
    assert candidate.evidence_key == "vector:v1"
    assert seen == [INVALID_CHUNK_INDEX, FALLBACK_IDENTITY]


def test_missing_chunk_index_is_a_fallback_but_not_invalid() -> None:
    seen, report = _counting()
    candidate_of(recalled("v1", docId="d"), report)  # type: ignore[arg-type]
    assert seen == [FALLBACK_IDENTITY]


def test_disagreeing_spellings_prefer_camel_case_and_are_counted() -> None:
    seen, report = _counting()
    hit = recalled(docId="camel", doc_id="snake", chunkIndex=1, chunk_index=9)
    candidate = candidate_of(hit, report)  # type: ignore[arg-type]
    assert candidate.evidence_key == "camel#chunk-1"
    assert seen == [IDENTITY_CONFLICT, IDENTITY_CONFLICT]


def test_spellings_that_parse_alike_are_not_a_conflict() -> None:
    seen, report = _counting()
    candidate_of(recalled(docId="d", doc_id="d", chunkIndex=1, chunk_index="1"), report)  # type: ignore[arg-type]
    assert seen == []


def test_without_id_or_chunk_the_key_hashes_source_and_content() -> None:
    a = candidate_of(recalled(None, content="alpha", source="a.md"))
    b = candidate_of(recalled(None, content="alpha", source="b.md"))
    assert a.evidence_key.startswith("content:") and len(a.evidence_key) == len("content:") + 16
    assert a.evidence_key != b.evidence_key
    assert evidence_key(None, None, None, "a.md", "alpha") == a.evidence_key


def test_source_prefers_metadata_source_then_path_then_doc_id_then_key() -> None:
    assert candidate_of(recalled(source="s.md", path="p.md", docId="d")).source == "s.md"
    assert candidate_of(recalled(path="p.md", docId="d")).source == "p.md"
    assert candidate_of(recalled(docId="d", chunkIndex=0)).source == "d"
    assert candidate_of(recalled("v7")).source == "vector:v7"


def test_normalize_keeps_reason_score_and_recall_order() -> None:
    first, candidate = normalized([recalled("v0"), recalled(score=0.7, reason="knn:vector")])
    assert (candidate.score, candidate.hit_reasons, candidate.recall_order) == (
        0.7, ("knn:vector",), 1)
    assert first.recall_order == 0
