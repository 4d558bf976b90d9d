"""The same transforms on unbounded input: TestStream on the streaming DirectRunner."""

from __future__ import annotations

from pathlib import Path

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.test_stream import TestStream
from apache_beam.testing.util import assert_that, equal_to

from pipeline import testing
from pipeline.run.evidence_transform import EvidenceTransform
from pipeline.testing import deterministic_embedder, memory_port_factory, test_settings
from stages.models import Query
from tests.builders import chunk_records, unit_vectors


def test_evidence_pipeline_runs_on_an_unbounded_stream(tmp_path: Path) -> None:
    vectors = unit_vectors(24, dim=8)
    open_store = memory_port_factory(chunk_records(vectors, chunks_per_doc=3))
    settings = test_settings("rag.return-n=3", dimension=8)
    queries = testing.queries([{"id": f"q{i}", "vector": vectors[i].tolist()} for i in range(6)])
    stream = (TestStream()
              .add_elements(queries[:3])
              .advance_watermark_to(10)
              .add_elements([*queries[3:], Query(id="bad", vector=(1.0,))])
              .advance_watermark_to_infinity())
    options = PipelineOptions()
    options.view_as(StandardOptions).streaming = True
    with TestPipeline(options=options) as p:
        outputs = p | stream | EvidenceTransform(
            settings, port_factory=open_store, embedder_factory=deterministic_embedder(8))
        firsts = outputs.results | "First" >> beam.Map(
            lambda r: (r.query_id, r.evidence[0].evidence_key, len(r.evidence)))
        expected = [(f"q{i}", f"doc{i // 3}#chunk-{i % 3}", 3) for i in range(6)]
        assert_that(firsts, equal_to(expected), label="results")
        assert_that(outputs.dead_letters | beam.Map(lambda d: d.query_id), equal_to(["bad"]),
                    label="dead letters")
