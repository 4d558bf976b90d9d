"""A pipeline and its DirectRunner test as a user writes them: only `pipeline.api` and
`pipeline.testing` are imported (CI type-checks this file with mypy)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from pipeline.api import EmbedderFactory, EvidenceTransform, PortFactory, QueryResult, Settings
from pipeline.testing import (
    chunk_records,
    deterministic_embedder,
    memory_port_factory,
    queries,
    test_settings,
)


def best_keys(result: QueryResult) -> tuple[str, list[str]]:
    """The user's own step after the evidence: a query's evidence keys, best first."""
    return result.query_id, [block.evidence_key for block in result.evidence]


def attach_evidence(rows: beam.PCollection[dict[str, object]], settings: Settings,
                    port_factory: PortFactory) -> beam.PCollection[tuple[str, list[str]]]:
    """The user's pipeline: their rows as queries, evidence attached, keys kept."""
    outputs = (rows
               | "AsQueries" >> beam.FlatMap(lambda row: queries([row]))
               | "Evidence" >> EvidenceTransform(settings, port_factory=port_factory,
                                                 embedder_factory=deterministic_embedder()))
    return outputs.results | "BestKeys" >> beam.Map(best_keys)


def test_the_users_pipeline_keeps_two_chunks_of_one_document() -> None:
    records = chunk_records({"guide.md": ["Open a file to read it.", "Read a file line by line.",
                                          "Read a file in binary mode."],
                             "other.md": ["Sort a list of numbers."]})
    with TestPipeline() as pipeline:
        rows = pipeline | beam.Create([{"id": "q1", "text": "read a file"}])
        keys = attach_evidence(rows, test_settings("rag.return-n=3"),
                               memory_port_factory(records))
        assert_that(keys | beam.MapTuple(lambda query_id, found: (query_id, len(found))),
                    equal_to([("q1", 3)]))
        assert_that(keys | "Docs" >> beam.MapTuple(
            lambda query_id, found: sorted({k.split("#")[0] for k in found})),
            equal_to([["guide.md", "other.md"]]), label="two per document")


def test_the_shipped_fixtures_build_a_pipeline_test(
        evidence_settings: Settings, evidence_embedder: EmbedderFactory,
        memory_port: Callable[[Mapping[str, Sequence[str]]], PortFactory]) -> None:
    port_factory = memory_port({"a.md": ["Parse JSON text."], "b.md": ["Sort a list."]})
    with TestPipeline() as pipeline:
        outputs = (pipeline
                   | beam.Create(queries([{"id": "q", "text": "parse json"}]))
                   | EvidenceTransform(evidence_settings, port_factory=port_factory,
                                       embedder_factory=evidence_embedder))
        assert_that(outputs.results | beam.Map(lambda r: r.evidence[0].evidence_key),
                    equal_to(["a.md#chunk-0"]))
