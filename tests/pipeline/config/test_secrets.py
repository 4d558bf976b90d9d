"""A known secret, put in every credential source, appears in no output, log or dead letter."""

from __future__ import annotations

from pathlib import Path

import pytest

from connectors.elasticsearch.config import ElasticsearchConfig
from connectors.elasticsearch.credentials import read_credentials
from core.errors import ConfigError, SearchUnavailableError, redact
from engines.processes import free_port
from pipeline.cli.main import main
from pipeline.config.loader import load_settings

SECRET = "s3cr3t-Value-42"


@pytest.mark.parametrize("value", [f"{SECRET}\r", f"{SECRET}\nX", f"\x1b{SECRET}"])
def test_a_credential_with_a_control_character_is_refused_without_showing_it(
        value: str) -> None:
    config = ElasticsearchConfig(hosts=("http://h:9200",), index="i")
    with pytest.raises(ConfigError) as raised:
        read_credentials(config, {"RAG_EVIDENCE_ES_API_KEY": value})
    assert "RAG_EVIDENCE_ES_API_KEY" in str(raised.value) and "control character" in str(
        raised.value)
    assert SECRET not in str(raised.value)


def test_a_crlf_credentials_file_is_read_without_its_carriage_returns(tmp_path: Path) -> None:
    secrets = tmp_path / "es.env"
    secrets.write_bytes(f"USERNAME=elastic\r\nPASSWORD={SECRET}\r\n".encode())
    config = ElasticsearchConfig(hosts=("h",), index="i", credentials_file=str(secrets))
    assert read_credentials(config, {}) == {"basic_auth": ("elastic", SECRET)}


def test_a_control_character_in_the_credentials_file_is_refused_naming_the_key(
        tmp_path: Path) -> None:
    secrets = tmp_path / "es.env"
    secrets.write_bytes(f"USERNAME=elastic\nPASSWORD={SECRET}\x00\n".encode())
    config = ElasticsearchConfig(hosts=("h",), index="i", credentials_file=str(secrets))
    with pytest.raises(ConfigError, match="credentials-file PASSWORD") as raised:
        read_credentials(config, {})
    assert SECRET not in str(raised.value)


def test_a_host_url_with_credentials_is_refused_and_not_echoed() -> None:
    with pytest.raises(ConfigError, match="must not hold credentials.*RAG_EVIDENCE_ES_PASSWORD"
                       ) as raised:
        load_settings(overrides=[f"search.elasticsearch.hosts=[http://elastic:{SECRET}@h:9200]"])
    assert SECRET not in str(raised.value) and "***@h:9200" in str(raised.value)


def test_every_error_message_redacts_url_credentials() -> None:
    error = SearchUnavailableError(f"cannot reach ['https://u:{SECRET}@h:9200']")
    assert SECRET not in str(error) and "https://***@h:9200" in str(error)
    assert redact("see http://a@b and https://c:d@e/f") == "see http://***@b and https://***@e/f"


@pytest.mark.parametrize("value", ["yes-please", "1", "'true'"])
def test_verify_certs_takes_booleans_only(value: str) -> None:
    with pytest.raises(ConfigError, match="search.elasticsearch.verify-certs"):
        load_settings(overrides=[f"search.elasticsearch.verify-certs={value}"])


def test_failing_runs_with_the_secret_in_every_source_never_show_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    secrets = tmp_path / "es.env"
    secrets.write_text(f"API_KEY={SECRET}\nUSERNAME=elastic\nPASSWORD={SECRET}\n")
    monkeypatch.setenv("RAG_EVIDENCE_ES_API_KEY", SECRET)
    monkeypatch.setenv("RAG_EVIDENCE_ES_PASSWORD", SECRET)
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": "q", "vector": [1.0, 0.0]}\n')
    unreachable = f"http://127.0.0.1:{free_port()}"
    common = ["--set", "search.backend=elasticsearch", "--set",
              f"search.elasticsearch.credentials-file={secrets}",
              "--set", "search.elasticsearch.max-attempts=1",
              "--set", "search.elasticsearch.request-timeout=2"]
    runs = [
        ["run", "--queries", str(queries), "--out", str(tmp_path / "o.jsonl"), *common,
         "--set", f"search.elasticsearch.hosts=[{unreachable}]"],
        ["run", "--queries", str(queries), "--out", str(tmp_path / "o.jsonl"), *common,
         "--set", f"search.elasticsearch.hosts=[http://elastic:{SECRET}@127.0.0.1:1]"],
        ["index", "--docs", str(tmp_path), *common,
         "--set", f"search.elasticsearch.hosts=[{unreachable}]"],
        ["-v", "run", "--queries", str(queries), "--out", f"es://{SECRET}-evidence", *common,
         "--set", f"search.elasticsearch.hosts=[{unreachable}]"],
    ]
    for args in runs:
        assert main(args) != 0
    captured = capsys.readouterr()
    written = [p.read_text(errors="replace") for p in tmp_path.rglob("*.jsonl")
               if p.name != "q.jsonl"]
    for text in [captured.out, captured.err, *written]:
        assert SECRET not in text.replace(f"{SECRET}-evidence", "")
    assert "cannot reach" in captured.err
