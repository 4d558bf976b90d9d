"""The one place that wires a run: read queries, build evidence, write results and dead letters."""

from __future__ import annotations

import json
from typing import Any

import apache_beam as beam
from apache_beam.transforms.error_handling import CollectingErrorHandler
from pydantic_core import PydanticSerializationError

from connectors.embedder_port import EmbedderFactory
from connectors.errors import RagEvidenceError
from connectors.search_port import PortFactory
from pipeline.backends import embedder_factory_for, port_factory_for
from pipeline.es_sinks import WriteEvidenceToElasticsearch
from pipeline.evidence_transform import EvidenceTransform
from pipeline.parquet_io import RESULT_SCHEMA, is_parquet, result_row
from pipeline.progress import LogProgress
from pipeline.query_lines import ParseQueries
from pipeline.query_sources import read_queries
from pipeline.repeated_ids import RepeatedQueryIds
from pipeline.settings import Settings
from pipeline.single_file_sink import ParquetRows, TextLines, WriteToSingleFile
from stages import counters
from stages.internal_errors import InternalDeadLetters
from stages.models import DeadLetter, QueryResult

ES_SCHEME = "es://"


def build_pipeline(
    pipeline: beam.Pipeline,
    settings: Settings,
    *,
    queries_path: str,
    out_path: str,
    dead_letter_path: str,
    port_factory: PortFactory | None = None,
    embedder_factory: EmbedderFactory | None = None,
    embedder_refusal: RagEvidenceError | None = None,
) -> None:
    """Adds the whole job to `pipeline`; collaborators default to the configured production ones.

    `out_path` is a JSONL file, or `es://INDEX` to write each result as a document of INDEX
    (on the configured Elasticsearch cluster) with `_id` = query id. `embedder_refusal`, when
    set, dead-letters every query whose text would need embedding (see `preflight`).
    """
    errors = CollectingErrorHandler()
    repeated_ids = (pipeline
                    | "ReadQueriesForIds" >> read_queries(queries_path)
                    | "RepeatedIds" >> RepeatedQueryIds())
    parsed = (pipeline
              | "ReadQueries" >> read_queries(queries_path)
              | "Parse" >> ParseQueries(repeated_ids).with_error_handler(errors))
    evidence = parsed.queries | "Evidence" >> EvidenceTransform(
        settings,
        port_factory=port_factory or port_factory_for(settings),
        embedder_factory=embedder_factory or embedder_factory_for(settings),
        embedder_refusal=embedder_refusal,
    ).with_error_handler(errors)
    results = evidence.results | "Progress" >> LogProgress()
    dead_letters = [parsed.dead_letter, evidence.dead_letters]
    if out_path.startswith(ES_SCHEME):
        config = settings.search.elasticsearch.adapter_config()
        dead_letters.append(results | "WriteResultsToElasticsearch" >> WriteEvidenceToElasticsearch(
            config, out_path[len(ES_SCHEME):]).with_error_handler(errors))
    elif is_parquet(out_path):
        (results
         | "ResultRow" >> beam.Map(_counted_row).with_exception_handling(error_handler=errors)
         | "WriteResults" >> WriteToSingleFile(out_path, ParquetRows(RESULT_SCHEMA)))
    else:
        (results
         | "ResultJson" >> beam.Map(_counted_json).with_output_types(str).with_exception_handling(
             error_handler=errors)
         | "WriteResults" >> WriteToSingleFile(out_path, TextLines()))
    errors.close()
    dead_letters.append(errors.output() | "InternalErrors" >> InternalDeadLetters())
    (tuple(dead_letters)
     | "AllDeadLetters" >> beam.Flatten()
     | "DeadLetterJson" >> beam.Map(to_json_line).with_output_types(str)
     | "WriteDeadLetters" >> WriteToSingleFile(dead_letter_path, TextLines()))


def _counted_row(result: QueryResult) -> dict[str, Any]:
    row = result_row(result)
    counters.count(counters.RESULTS)
    return row


def _counted_json(result: QueryResult) -> str:
    line = to_json_line(result)
    counters.count(counters.RESULTS)
    return line


def to_json_line(record: QueryResult | DeadLetter) -> str:
    """One JSON line; text that UTF-8 cannot encode (a lone surrogate) is written escaped."""
    try:
        return record.model_dump_json()
    except PydanticSerializationError:
        return json.dumps(record.model_dump(), ensure_ascii=True)
