"""One test per precedence edge: defaults < YAML file < environment < --set."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from core.errors import ConfigError
from pipeline.config.loader import load_settings


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text("rag:\n  retrieve-k: 30\n  return-n: 7\n")
    return path


def test_defaults_match_the_spec() -> None:
    rag = load_settings().rag
    assert (rag.retrieve_k, rag.return_n, rag.max_chunks_per_document) == (20, 5, 2)


def test_file_overrides_defaults(config_file: Path) -> None:
    assert load_settings(config_file).rag.retrieve_k == 30


def test_environment_overrides_file(config_file: Path) -> None:
    env = {"RAG_EVIDENCE__RAG__RETRIEVE_K": "40"}
    settings = load_settings(config_file, env)
    assert (settings.rag.retrieve_k, settings.rag.return_n) == (40, 7)


def test_command_line_overrides_environment(config_file: Path) -> None:
    env = {"RAG_EVIDENCE__RAG__RETRIEVE_K": "40"}
    assert load_settings(config_file, env, ["rag.retrieve-k=50"]).rag.retrieve_k == 50


def test_shipped_local_config_is_valid() -> None:
    settings = load_settings(Path(__file__).parents[3] / "configs" / "local.yaml")
    assert settings.search.backend == "embedded"


def test_legacy_top_k_fills_both_absent_widths_and_says_so(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="pipeline.config.settings"):
        rag = load_settings(overrides=["rag.top-k=9"]).rag
    assert (rag.retrieve_k, rag.return_n) == (9, 9)
    assert "legacy rag.top-k=9" in caplog.text


def test_legacy_top_k_never_overrides_a_new_key() -> None:
    rag = load_settings(overrides=["rag.top-k=9", "rag.return-n=3"]).rag
    assert (rag.retrieve_k, rag.return_n) == (9, 3)


def test_unknown_key_suggests_the_nearest_valid_key() -> None:
    with pytest.raises(ConfigError, match=r"rag\.retreive-k .*did you mean 'rag\.retrieve-k'"):
        load_settings(overrides=["rag.retreive-k=3"])


def test_unknown_environment_key_is_rejected_too() -> None:
    with pytest.raises(ConfigError, match="max-chunks-per-doc"):
        load_settings(environ={"RAG_EVIDENCE__RAG__MAX_CHUNKS_PER_DOC": "3"})


@pytest.mark.parametrize("override, key", [
    ("rag.max-chunks-per-document=0", "rag.max-chunks-per-document"),
    ("rag.return-n=-1", "rag.return-n"),
    ("search.backend=solr", "search.backend"),
])
def test_out_of_range_values_name_key_and_value(override: str, key: str) -> None:
    with pytest.raises(ConfigError, match=rf"config {key}="):
        load_settings(overrides=[override])


def test_malformed_override_is_rejected() -> None:
    with pytest.raises(ConfigError, match="key.path=value"):
        load_settings(overrides=["rag.return-n"])


def test_config_that_is_not_a_mapping_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("- just\n- a list\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_settings(path)


def test_shipped_elasticsearch_config_is_valid_and_holds_no_secret() -> None:
    path = Path(__file__).parents[3] / "configs" / "elasticsearch.yaml"
    settings = load_settings(path)
    es = settings.search.elasticsearch
    assert settings.search.backend == "elasticsearch" and es.index == "rag-chunks"
    assert "password:" not in path.read_text() and "api-key:" not in path.read_text()


def test_null_metadata_field_selects_the_top_level_layout() -> None:
    settings = load_settings(overrides=["search.elasticsearch.metadata-field=null"])
    assert settings.search.elasticsearch.field_path("docId") == "docId"


def test_every_error_is_reported_at_once_naming_where_each_value_came_from(
        config_file: Path) -> None:
    config_file.write_text("rag:\n  retrieve-k: 0\nsearch:\n  batch-size: true\n")
    env = {"RAG_EVIDENCE__PROJECTION__MAX_ITEMS": "none-of-these"}
    with pytest.raises(ConfigError) as raised:
        load_settings(config_file, env, ["rag.return-n=-1"])
    message = str(raised.value)
    assert f"rag.retrieve-k=0 (from file {config_file}): must be at least 1" in message
    assert "search.batch-size=True (from file" in message and "not true or false" in message
    assert ("projection.max-items='none-of-these' (from environment "
            "RAG_EVIDENCE__PROJECTION__MAX_ITEMS): must be a whole number") in message
    assert "rag.return-n=-1 (from --set): must be at least 1" in message


def test_a_bad_legacy_top_k_is_reported_as_top_k() -> None:
    with pytest.raises(ConfigError, match=r"rag.top-k=0 \(from --set\): must be at least 1"):
        load_settings(overrides=["rag.top-k=0"])


def test_a_section_given_a_value_says_so_in_plain_words() -> None:
    with pytest.raises(ConfigError, match=r"rag=5 \(from --set\): must be a section"):
        load_settings(overrides=["rag=5"])


def test_a_retrieve_k_below_return_n_is_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="pipeline.config.settings"):
        load_settings(overrides=["rag.retrieve-k=3", "rag.return-n=5"])
    assert "rag.retrieve-k=3 is below rag.return-n=5" in caplog.text


@pytest.mark.parametrize("path", sorted((Path(__file__).parents[3] / "configs").rglob("*.yaml")),
                         ids=lambda p: p.name)
def test_every_shipped_config_loads(path: Path) -> None:
    assert load_settings(path).rag.return_n >= 1
