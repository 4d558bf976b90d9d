"""Work bounded by the input limits, whatever the input (docs/formats.md, input limits)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.errors import ConfigError
from core.input_limits import MAX_FILTER_KEYS, MAX_FILTER_VALUES
from pipeline.config.loader import MAX_CONFIG_BYTES, load_settings
from pipeline.run.query_parse import parse_query_line
from stages.models import DeadLetter

BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
    for p, n in zip("abcdefgh", "bcdefghi", strict=True))


def test_a_yaml_alias_bomb_is_refused_at_once(tmp_path: Path) -> None:
    config = tmp_path / "bomb.yaml"
    config.write_text(BOMB)
    with pytest.raises(ConfigError, match="uses a YAML alias"):
        load_settings(config)


def test_a_config_larger_than_the_limit_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "big.yaml"
    config.write_text("# " + "x" * MAX_CONFIG_BYTES + "\n")
    with pytest.raises(ConfigError, match="is larger than"):
        load_settings(config)


def test_thousands_of_filter_keys_are_one_dead_letter() -> None:
    filters = {f"k{i}": "v" for i in range(MAX_FILTER_KEYS + 1)}
    parsed = parse_query_line(1, json.dumps({"id": "q", "text": "x", "filters": filters}))
    assert isinstance(parsed, DeadLetter) and f"at most {MAX_FILTER_KEYS}" in parsed.error


def test_a_filter_list_past_the_limit_is_one_dead_letter() -> None:
    filters = {"docId": [f"d{i}" for i in range(MAX_FILTER_VALUES + 1)]}
    parsed = parse_query_line(1, json.dumps({"id": "q", "text": "x", "filters": filters}))
    assert isinstance(parsed, DeadLetter) and f"at most {MAX_FILTER_VALUES}" in parsed.error


def test_filters_within_the_limits_are_a_query() -> None:
    filters = {f"k{i}": ["v"] * 3 for i in range(MAX_FILTER_KEYS)}
    parsed = parse_query_line(1, json.dumps({"id": "q", "text": "x", "filters": filters}))
    assert not isinstance(parsed, DeadLetter)
