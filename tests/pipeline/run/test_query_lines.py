from __future__ import annotations

import pytest

from pipeline.run.query_parse import parse_query_line
from stages.models import DeadLetter, Query


def test_valid_line_parses_to_a_query() -> None:
    query = parse_query_line(4, '{"id": "q1", "text": "hi", "filters": {"lang": "en"}}')
    assert query == Query(id="q1", text="hi", filters={"lang": "en"}).from_line(4)
    assert isinstance(query, Query) and query.line_number == 4


@pytest.mark.parametrize("line, words", [
    ("{not json", ["not JSON"]),
    ("[1, 2]", ["JSON object"]),
    ('{"id": "q"}', ["text", "vector"]),
    ('{"id": "q", "text": "  "}', ["non-blank"]),
    ('{"id": "q", "vector": [1.0, NaN]}', ["vector", "finite"]),
    ('{"id": "q", "text": "x", "colour": "red"}', ["colour", "red"]),
    ('{"id": "q", "vectors": []}', ["vectors"]),
    ('{"text": "no id"}', ["id"]),
])
def test_bad_lines_become_dead_letters_naming_the_problem(line: str, words: list[str]) -> None:
    letter = parse_query_line(7, line)
    assert isinstance(letter, DeadLetter)
    assert letter.line_number == 7 and letter.stage == "parse"
    for word in words:
        assert word in letter.error


@pytest.mark.parametrize("line, error", [
    ('{"id": "q", "txt": "typo field"}', "txt='typo field': unknown field; did you mean 'text'?"),
    ('{"id": "q", "text": "x", "colour": "red"}',
     "colour='red': unknown field; the fields are ['id', 'text', 'vector', 'vectors', 'filters']"),
    ('{"id": "q", "text": }', "line is not JSON: Expecting value at column 21"),
])
def test_dead_letters_say_it_in_our_words(line: str, error: str) -> None:
    """An unknown field gets the nearest known one; a JSON error gives its column within the
    line, never a second line number beside the dead letter's own."""
    letter = parse_query_line(6, line)
    assert isinstance(letter, DeadLetter) and letter.error == error


def test_dead_letter_keeps_the_query_id_when_it_has_one() -> None:
    letter = parse_query_line(2, '{"id": "q9", "vector": "oops"}')
    assert isinstance(letter, DeadLetter) and letter.query_id == "q9"
    assert letter.input == {"id": "q9", "vector": "oops"}
