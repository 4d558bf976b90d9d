"""The evidence pipeline as one composite transform: Query -> QueryResult (+ dead letters)."""

from __future__ import annotations

from typing import NamedTuple

import apache_beam as beam

from connectors.embedder_port import EmbedderFactory
from connectors.search_port import PortFactory
from pipeline.settings import Settings
from stages.dedup import KeyedDedup
from stages.identity import IdentityNormalize
from stages.models import DeadLetter, Query, QueryResult
from stages.per_doc_cap import PerDocCap
from stages.projection import Project
from stages.recall import Recall
from stages.top_n import TopN


class EvidenceOutputs(NamedTuple):
    results: beam.PCollection[QueryResult]
    dead_letters: beam.PCollection[DeadLetter]


class EvidenceTransform(beam.PTransform[beam.PCollection[Query], EvidenceOutputs]):
    """Recall -> IdentityNormalize -> KeyedDedup -> PerDocCap -> TopN -> Project.

    Element-wise per query (no shuffle), so it runs on bounded and unbounded input alike.

    >>> outputs = queries | EvidenceTransform(  # doctest: +SKIP
    ...     settings, port_factory=open_port, embedder_factory=open_embedder)
    >>> outputs.results, outputs.dead_letters  # doctest: +SKIP
    """

    def __init__(self, settings: Settings, *, port_factory: PortFactory,
                 embedder_factory: EmbedderFactory) -> None:
        super().__init__()
        self._settings = settings
        self._port_factory = port_factory
        self._embedder_factory = embedder_factory

    def expand(self, queries: beam.PCollection[Query]) -> EvidenceOutputs:
        rag = self._settings.rag
        recalled = queries | "Recall" >> Recall(
            self._port_factory, self._embedder_factory,
            retrieve_k=rag.retrieve_k, batch_size=self._settings.search.batch_size)
        results = (
            recalled.hits
            | "IdentityNormalize" >> IdentityNormalize()
            | "KeyedDedup" >> KeyedDedup()
            | "PerDocCap" >> PerDocCap(rag.max_chunks_per_document)
            | "TopN" >> TopN(rag.return_n)
            | "Project" >> Project(self._settings.projection.budget())
        )
        return EvidenceOutputs(results, recalled.dead_letter)
