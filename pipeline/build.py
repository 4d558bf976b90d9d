"""The one place that wires a run: read queries, build evidence, write results and dead letters."""

from __future__ import annotations

import apache_beam as beam

from connectors.embedder_port import EmbedderFactory
from connectors.search_port import PortFactory
from pipeline.backends import embedder_factory_for, port_factory_for
from pipeline.evidence_transform import EvidenceTransform
from pipeline.progress import LogProgress
from pipeline.query_lines import ParseQueries, ReadQueryLines
from pipeline.settings import Settings
from stages.models import DeadLetter, QueryResult


def build_pipeline(
    pipeline: beam.Pipeline,
    settings: Settings,
    *,
    queries_path: str,
    out_path: str,
    dead_letter_path: str,
    port_factory: PortFactory | None = None,
    embedder_factory: EmbedderFactory | None = None,
) -> None:
    """Adds the whole job to `pipeline`; collaborators default to the configured production ones."""
    parsed = (pipeline
              | "ReadQueries" >> ReadQueryLines(queries_path)
              | "Parse" >> ParseQueries())
    evidence = parsed.queries | "Evidence" >> EvidenceTransform(
        settings,
        port_factory=port_factory or port_factory_for(settings),
        embedder_factory=embedder_factory or embedder_factory_for(settings),
    )
    (evidence.results
     | "Progress" >> LogProgress()
     | "ResultJson" >> beam.Map(_result_json).with_output_types(str)
     | "WriteResults" >> _write_lines(out_path))
    ((parsed.dead_letter, evidence.dead_letters)
     | "AllDeadLetters" >> beam.Flatten()
     | "DeadLetterJson" >> beam.Map(_dead_letter_json).with_output_types(str)
     | "WriteDeadLetters" >> _write_lines(dead_letter_path))


def _result_json(result: QueryResult) -> str:
    return result.model_dump_json()


def _dead_letter_json(letter: DeadLetter) -> str:
    return letter.model_dump_json()


def _write_lines(path: str) -> beam.io.WriteToText:
    return beam.io.WriteToText(path, shard_name_template="", num_shards=1)
