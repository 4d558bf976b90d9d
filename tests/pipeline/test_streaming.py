"""The same transforms on unbounded input: TestStream on the streaming DirectRunner."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.test_stream import TestStream
from apache_beam.testing.util import assert_that, equal_to

from connectors.embedders.hashing import HashingEmbedder
from pipeline.config.loader import load_settings
from pipeline.run.evidence_transform import EvidenceTransform
from stages.models import Query
from tests.builders import chunk_records, embedded_store, unit_vectors


def test_evidence_pipeline_runs_on_an_unbounded_stream(tmp_path: Path) -> None:
    vectors = unit_vectors(24, dim=8)
    open_store = embedded_store(tmp_path, chunk_records(vectors, chunks_per_doc=3))
    settings = load_settings(overrides=["rag.return-n=3"])
    queries = [Query(id=f"q{i}", vector=tuple(vectors[i].tolist())) for i in range(6)]
    stream = (TestStream()
              .add_elements(queries[:3])
              .advance_watermark_to(10)
              .add_elements([*queries[3:], Query(id="bad", vector=(1.0,))])
              .advance_watermark_to_infinity())
    options = PipelineOptions()
    options.view_as(StandardOptions).streaming = True
    with TestPipeline(options=options) as p:
        outputs = p | stream | EvidenceTransform(
            settings, port_factory=open_store, embedder_factory=partial(HashingEmbedder, 8))
        firsts = outputs.results | "First" >> beam.Map(
            lambda r: (r.query_id, r.evidence[0].evidence_key, len(r.evidence)))
        expected = [(f"q{i}", f"doc{i // 3}#chunk-{i % 3}", 3) for i in range(6)]
        assert_that(firsts, equal_to(expected), label="results")
        assert_that(outputs.dead_letters | beam.Map(lambda d: d.query_id), equal_to(["bad"]),
                    label="dead letters")
