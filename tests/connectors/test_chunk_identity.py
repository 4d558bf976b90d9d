"""The shortcut for metadata as `index` writes it resolves exactly as the whole rule does."""

from __future__ import annotations

import itertools
from typing import Any

from core.chunk_identity import Identity, resolve_any_identity, resolve_identity

DOC_IDS: list[Any] = ["a", " ", "", 7, None, True, 2**63]
INDEXES: list[Any] = [0, 3, -1, 2**63, 2**63 - 1, True, 2.0, "4", None]
MISSING = object()


def _metadata(doc_id: Any, index: Any, snake_doc: Any, snake_index: Any) -> dict[str, Any]:
    pairs = (("docId", doc_id), ("chunkIndex", index), ("doc_id", snake_doc),
             ("chunk_index", snake_index), ("source", "s.md"))
    return {key: value for key, value in pairs if value is not MISSING}


def test_shortcut_agrees_with_the_whole_rule_on_every_mix() -> None:
    cases = itertools.product([*DOC_IDS, MISSING], [*INDEXES, MISSING], ["a", "b", MISSING],
                              [3, 5, MISSING])
    checked = 0
    for doc_id, index, snake_doc, snake_index in cases:
        metadata = _metadata(doc_id, index, snake_doc, snake_index)
        assert resolve_identity(metadata) == resolve_any_identity(metadata), metadata
        checked += 1
    assert checked == 8 * 10 * 3 * 3


def test_written_metadata_takes_the_shortcut_to_the_same_identity() -> None:
    assert resolve_identity({"docId": "a", "chunkIndex": 2, "source": "a.md"}) == Identity(
        "a", 2, "a.md", 0)
    assert resolve_identity({"docId": "a", "chunkIndex": 2, "chunk_index": 5}).flags != 0
