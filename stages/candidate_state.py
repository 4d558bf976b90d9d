"""What a run keeps of each query's recall for the next run to continue from (`QueryState`):
every sub-query's top `retrieve-k + KEPT_BEYOND` chunks, and a bound on what it left out."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

import numpy as np

from connectors.search_port import ChunkHits
from stages.models import EmbeddedQuery, Query, QueryHits, QueryState, RecalledList

KEPT_BEYOND = 8
"""Chunks kept beyond `retrieve-k` per sub-query: a continued query stays exact while no more
than this many of its kept chunks are deleted or rewritten (docs/decisions)."""
NO_BOUND = float("-inf")
"""The bound of a list that holds every chunk that matches."""


def kept_width(retrieve_k: int) -> int:
    """How many chunks a sub-query keeps for the next run."""
    return retrieve_k + KEPT_BEYOND


def asked_width(retrieve_k: int) -> int:
    """How many chunks a run that keeps state asks the store for per sub-query: one more than
    it keeps, whose score is the bound of the rest."""
    return kept_width(retrieve_k) + 1


def query_fingerprint(query: Query) -> str:
    """SHA-256 of what a query searches with: text, vectors (their float64 bytes) and filters
    (canonical JSON); not its id."""
    sha = hashlib.sha256()
    parts = [(query.text or "").encode("utf-8", "surrogatepass") if query.text is not None
             else b"\x00",
             *(np.asarray(v, dtype=np.float64).tobytes() if v is not None else b"\x00"
               for v in (query.vector, *(query.vectors or ()))),
             b"|" * len(query.vectors or ()),
             json.dumps(query.filters, sort_keys=True, ensure_ascii=False,
                        default=str).encode("utf-8", "surrogatepass")]
    for part in parts:
        sha.update(len(part).to_bytes(8, "little"))
        sha.update(part)
    return sha.hexdigest()


def recalled_list(reason: str, hits: ChunkHits, asked: int, bound: float = NO_BOUND
                  ) -> tuple[RecalledList, int] | None:
    """The list a sub-query keeps from `hits` (asked for `asked`, every hit above `bound`), and
    how many of `hits` it holds: when the store gave all it was asked, the last hit's score is
    the new bound, and the hits tied with it are left out too (their order against the
    chunks not recalled is unknown). None when a hit has no id."""
    if any(chunk_id is None for chunk_id in hits.ids):
        return None
    scores = list(hits.scores)
    if len(hits) >= asked:
        bound = scores[-1]
        held = sum(1 for score in scores if score > bound)
    else:
        held = len(hits)
    ids = tuple(str(chunk_id) for chunk_id in hits.ids[:held])
    return RecalledList(reason, ids, tuple(scores[:held]), bound), held


_NONE = ChunkHits([], [], [], [], [])


def _float32_exact(vector: Sequence[float] | None) -> bool:
    """Whether a text's vector is kept exactly as float32 (every embedder of ours gives
    float32; the state keeps no vector it would round)."""
    if vector is None:
        return True
    values = np.asarray(vector, dtype=np.float64)
    return bool(np.array_equal(values.astype(np.float32).astype(np.float64), values))


def by_reason(hits: QueryHits) -> list[tuple[str, ChunkHits]]:
    """A query's hits split back into its sub-queries' lists, in order."""
    lists: list[tuple[str, ChunkHits]] = []
    start, reasons = 0, list(hits.reasons)
    while start < len(reasons):
        end = start
        while end < len(reasons) and reasons[end] == reasons[start]:
            end += 1
        lists.append((reasons[start], hits.found.part(start, end)))
        start = end
    return lists


def joined(query_id: str, lists: Sequence[tuple[str, ChunkHits]]) -> QueryHits:
    """Sub-queries' lists as one query's hits, one list after another, ranks from 1 in each."""
    columns: tuple[list, ...] = ([], [], [], [], [], [], [])
    for reason, hits in lists:
        for column, values in zip(columns, (hits.ids, hits.scores, hits.identities,
                                            hits.contents, hits.refs, [reason] * len(hits),
                                            range(1, len(hits) + 1)), strict=True):
            column.extend(values)
    return QueryHits(query_id, ChunkHits(*columns[:5]), columns[5], columns[6])


def kept_state(embedded: EmbeddedQuery, reasons: Sequence[str], hits: QueryHits,
               retrieve_k: int) -> tuple[QueryHits, QueryState | None]:
    """A query recalled `asked_width(retrieve_k)` deep by the sub-queries `reasons` -> its
    hits cut to `retrieve_k` per sub-query (what the chain sees, as a run that keeps nothing
    recalls) and what it keeps (None when a hit has no id, or its text's vector is not exact
    in float32: such a query is answered in full next time)."""
    found_by = dict(by_reason(hits))
    lists, kept = [], []
    for reason in reasons:
        found = found_by.get(reason, _NONE)
        lists.append((reason, found.part(0, retrieve_k)))
        made = recalled_list(reason, found, asked_width(retrieve_k))
        kept.append(None if made is None else made[0])
    cut = joined(hits.query_id, lists)
    if any(k is None for k in kept) or not _float32_exact(embedded.text_vector):
        return cut, None
    return cut, QueryState(hits.query_id, query_fingerprint(embedded.query),
                           embedded.text_vector, tuple(kept),  # type: ignore[arg-type]
                           embedded.query)
