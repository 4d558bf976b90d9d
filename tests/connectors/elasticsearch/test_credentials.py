from __future__ import annotations

from pathlib import Path

import pytest

from connectors.elasticsearch.config import ElasticsearchConfig
from connectors.elasticsearch.credentials import read_credentials
from core.errors import ConfigError

CONFIG = ElasticsearchConfig(hosts=("http://h:9200",), index="i")


def test_api_key_from_the_environment() -> None:
    assert read_credentials(CONFIG, {"RAG_EVIDENCE_ES_API_KEY": "k"}) == {"api_key": "k"}


def test_basic_auth_from_the_environment() -> None:
    env = {"RAG_EVIDENCE_ES_USERNAME": "u", "RAG_EVIDENCE_ES_PASSWORD": "p"}
    assert read_credentials(CONFIG, env) == {"basic_auth": ("u", "p")}


def test_credentials_file_is_read_and_the_environment_wins(tmp_path: Path) -> None:
    secrets = tmp_path / "es.env"
    secrets.write_text("# comment\nUSERNAME=file-user\nPASSWORD=file-pass\n")
    config = ElasticsearchConfig(hosts=("h",), index="i", credentials_file=str(secrets))
    assert read_credentials(config, {}) == {"basic_auth": ("file-user", "file-pass")}
    assert read_credentials(config, {"RAG_EVIDENCE_ES_API_KEY": "k"}) == {"api_key": "k"}


def test_a_username_without_password_is_an_error_that_hides_the_value() -> None:
    with pytest.raises(ConfigError, match="<hidden>") as error:
        read_credentials(CONFIG, {"RAG_EVIDENCE_ES_USERNAME": "alice"})
    assert "alice" not in str(error.value)


def test_no_credentials_means_none() -> None:
    assert read_credentials(CONFIG, {}) == {}


def test_unreadable_credentials_file_names_the_setting(tmp_path: Path) -> None:
    config = ElasticsearchConfig(hosts=("h",), index="i", credentials_file=str(tmp_path / "no"))
    with pytest.raises(ConfigError, match="credentials-file"):
        read_credentials(config, {})
