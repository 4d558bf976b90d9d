"""The audit of a continued HNSW night, apart from the graph's.

A list continued on an HNSW store is last night's graph's answer, made exact only where the
store changed: a chunk last night's graph missed stays missed, as tonight's graph would miss
others. Its promise is a full HNSW night's: no worse than the store's measured recall. So
every (1 / `search.embedded.hnsw.audit-rate`)-th continued query's lists (without filters:
those are searched exactly) are also searched exactly over the whole store, and their top
`retrieve-k` compared with the continued one (`events.HNSW_CONTINUED_*`): the summary and
the manifest give this recall beside the graph's own (`events.HNSW_FOUND`, of the queries the
graph answered tonight).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from connectors import events
from connectors.embedded.hnsw_audit import audit_sample
from connectors.search_port import AuditablePort, can
from core.vectors import unit_rows
from stages.support import counters

AUDIT_BATCH = 1024
"""Lists searched exactly together: an exact search reads every vector of the store once per
call, however few queries it has, so a shard's few sampled lists wait for others."""


class ContinuedAudit:
    """Which continued queries a worker audits (see the module), and the audit itself: their
    lists wait until `AUDIT_BATCH` of them are sampled, or until the bundle ends (`flush`)."""

    def __init__(self, rate: float, retrieve_k: int) -> None:
        self._rate, self._retrieve_k, self._seen = rate, retrieve_k, 0
        self._vectors: list[np.ndarray] = []
        self._tops: list[Sequence[str]] = []

    def sample(self, count: int) -> list[int]:
        """Of the next `count` continued queries, the positions to audit."""
        first, self._seen = self._seen, self._seen + count
        return audit_sample(first, count, self._rate)

    def add(self, port: object, vectors: np.ndarray, tops: Sequence[Sequence[str]]) -> None:
        """Audits the continued lists `tops` (their ids, best first), whose vectors are
        `vectors` (one row a list, as the state holds them), with others."""
        self._vectors.append(vectors)
        self._tops.extend(tops)
        if len(self._tops) >= AUDIT_BATCH:
            self.flush(port)

    def flush(self, port: object) -> None:
        """Counts how many of each waiting list's exact top `retrieve-k` its continued top
        holds; a store without `exact_ids` (or none opened), or a vector without a
        direction, is not audited."""
        vectors, tops = self._vectors, self._tops
        self._vectors, self._tops = [], []
        if not tops or port is None or not can(port, "exact_ids"):
            return
        queries, usable = unit_rows(np.concatenate(vectors))
        kept = np.flatnonzero(usable).tolist()
        if not kept:
            return
        auditable: AuditablePort = port  # type: ignore[assignment]
        exact = auditable.exact_ids(queries[kept], self._retrieve_k)
        found = sum(len(set(tops[i][:self._retrieve_k]) & set(ids))
                    for i, ids in zip(kept, exact, strict=True))
        counters.count(events.HNSW_CONTINUED_AUDITED, len(kept))
        counters.count(events.HNSW_CONTINUED_EXPECTED, sum(len(ids) for ids in exact))
        counters.count(events.HNSW_CONTINUED_FOUND, found)
