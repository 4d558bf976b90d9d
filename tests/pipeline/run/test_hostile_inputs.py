"""Issue 7's reproductions: inputs that once killed a run now end as dead letters."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.errors import ConfigError
from pipeline.cli.main import main
from pipeline.config.loader import load_settings
from pipeline.io.json_lines import to_json_line
from pipeline.run.query_parse import parse_query_line
from stages.models import DeadLetter, Query
from tests.builders import candidate_of, chunk_records, recalled, unit_vectors

DIM = 8


def _dead(text: str) -> DeadLetter:
    parsed = parse_query_line(7, text)
    assert isinstance(parsed, DeadLetter), parsed
    assert parsed.stage == "parse" and parsed.line_number == 7
    json.loads(to_json_line(parsed))  # always serializable
    return parsed


def test_1_deeply_nested_json_is_a_dead_letter() -> None:
    assert "nested too deeply" in _dead("[" * 100_000).error
    assert "nested too deeply" in _dead('{"id": "q", "text": "x", "filters": {"a": '
                                        + "[" * 200 + "]" * 200 + "}}").error


def test_2_a_number_with_thousands_of_digits_is_a_dead_letter() -> None:
    assert "5000 digits" in _dead('{"id": "q", "vector": [' + "1" * 5000 + "]}").error


def test_3_a_lone_surrogate_is_a_dead_letter_that_can_be_written() -> None:
    letter = _dead('{"id": "a\\ud800", "text": "x"}')
    assert letter.error.startswith("id='a\\ud800'") and "unicode" in letter.error
    assert "\\ud800" in to_json_line(letter)


@pytest.mark.parametrize("component", ["1e39", "1e300", "-3.5e38"])
def test_4_components_outside_float32_are_dead_letters(component: str) -> None:
    assert "float32" in _dead(f'{{"id": "q", "vector": [{component}, 1.0]}}').error


@pytest.mark.parametrize("vector", ["[1e-50]", "[5e-324, 0.0]"])
def test_4_a_vector_that_is_zero_in_float32_is_a_dead_letter(vector: str) -> None:
    assert "zero in float32" in _dead(f'{{"id": "q", "vector": {vector}}}').error


def _index_failure(tmp_path: Path, bad_line: bytes) -> dict:
    """Indexes a good chunk line and `bad_line`; returns the one failure, checking exit 1."""
    chunks = tmp_path / "chunks.jsonl"
    good = chunk_records(unit_vectors(1, dim=2))[0].model_dump_json().encode()
    chunks.write_bytes(good + b"\n" + bad_line + b"\n")
    failures = tmp_path / "failures.jsonl"
    code = main(["index", "--chunks", str(chunks), "--failures", str(failures),
                 "--set", f"search.embedded.path={tmp_path / 'store'}"])
    assert code == 1
    (failure,) = [json.loads(line) for line in failures.read_text().splitlines()]
    assert failure["id"] == f"{chunks}:2"
    return failure


def test_4_a_chunk_vector_outside_float32_fails_with_its_line(tmp_path: Path) -> None:
    failure = _index_failure(tmp_path, b'{"id": "x", "vector": [1e39, 1.0], "content": ""}')
    assert "float32" in failure["error"]


@pytest.mark.parametrize("value", ["1" * 5000, 2**70, -1, "9" * 20])
def test_5_a_chunk_index_of_any_size_is_handled_as_invalid(value: object) -> None:
    candidate = candidate_of(recalled("v1", docId="doc", chunkIndex=value))
    assert candidate.chunk_index is None and candidate.evidence_key == "vector:v1"


def test_5_a_huge_doc_id_number_is_no_doc_id() -> None:
    assert candidate_of(recalled("v1", docId=10**500, chunkIndex=1)).doc_id is None


def test_6_invalid_utf8_in_a_chunk_file_fails_with_file_and_line(tmp_path: Path) -> None:
    failure = _index_failure(tmp_path, b'{"id": "b\xff", "vector": [1.0, 0.0], "content": ""}')
    assert "not valid UTF-8" in failure["error"]


def test_a_utf8_byte_order_mark_is_accepted_and_bad_utf8_is_a_dead_letter(
        tmp_path: Path) -> None:
    records = chunk_records(unit_vectors(4, dim=DIM))
    chunks = tmp_path / "chunks.jsonl"
    chunks.write_text("".join(r.model_dump_json() + "\n" for r in records))
    store = tmp_path / "store"
    assert main(["index", "--chunks", str(chunks), "--set", f"search.embedded.path={store}"]) == 0
    queries = tmp_path / "q.jsonl"
    vector = json.dumps(records[0].vector)
    queries.write_bytes(b"\xef\xbb\xbf" + f'{{"id": "bom", "vector": {vector}}}\n'.encode()
                        + b'{"id": "bad\xff", "text": "x"}\n')
    out, dead = tmp_path / "out.jsonl", tmp_path / "dead.jsonl"
    assert main(["run", "--queries", str(queries), "--out", str(out), "--dead-letter", str(dead),
                 "--set", f"search.embedded.path={store}", "--set", f"embedder.dim={DIM}"]) == 0
    assert [json.loads(x)["query_id"] for x in out.read_text().splitlines()] == ["bom"]
    (letter,) = [json.loads(x) for x in dead.read_text().splitlines()]
    assert letter["line_number"] == 2 and "not valid UTF-8" in letter["error"]


def test_10_a_key_set_under_a_value_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"rag.retrieve-k=5: is a value"):
        load_settings(overrides=["rag.retrieve-k=5", "rag.retrieve-k.x=1"])


def test_a_query_that_parses_is_still_a_query() -> None:
    assert isinstance(parse_query_line(1, '{"id": "q", "vector": [1e-30, 1.0]}'), Query)
