"""A value means what its field says, and a message says once what is wrong where."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.config.loader import load_settings
from pipeline.io.query_source import query_source
from pipeline.run.query_parse import parse_query_line
from stages.models import DeadLetter


def test_a_set_value_is_typed_by_the_field_it_sets() -> None:
    settings = load_settings(overrides=["embedder.query-prefix=query: ",
                                        "search.elasticsearch.index=2024-01-01",
                                        "search.elasticsearch.metadata-field=null",
                                        "rag.return-n=3"])
    assert settings.embedder.query_prefix == "query: "
    assert settings.search.elasticsearch.index == "2024-01-01"
    assert settings.search.elasticsearch.metadata_field is None
    assert settings.rag.return_n == 3


def test_an_environment_value_is_typed_by_the_field_it_sets() -> None:
    settings = load_settings(environ={"RAG_EVIDENCE__EMBEDDER__DOCUMENT_PREFIX": "passage: "})
    assert settings.embedder.document_prefix == "passage: "


@pytest.mark.parametrize("component", ["true", '"1.5"', "false"])
def test_a_boolean_or_a_string_is_no_vector_component(component: str) -> None:
    parsed = parse_query_line(1, f'{{"id": "q", "vector": [1.0, {component}]}}')
    assert isinstance(parsed, DeadLetter) and parsed.error.startswith("vector.1=")


def test_string_components_from_parquet_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "q.parquet"
    pq.write_table(pa.table({"id": ["q"], "vector": [["1.0", "0.5"]]}), path)
    ((number, row),) = query_source(str(path)).records()
    parsed = parse_query_line(number, row)
    assert isinstance(parsed, DeadLetter) and "vector.0='1.0'" in parsed.error


def test_a_null_parquet_id_says_that_the_id_is_required(tmp_path: Path) -> None:
    path = tmp_path / "q.parquet"
    pq.write_table(pa.table({"id": [None], "text": ["json"]}, schema=pa.schema(
        [("id", pa.string()), ("text", pa.string())])), path)
    ((number, row),) = query_source(str(path)).records()
    parsed = parse_query_line(number, row)
    assert isinstance(parsed, DeadLetter)
    assert parsed.error == "id: is required (absent, or null)"
