"""Reads Elasticsearch credentials from the environment or a KEY=VALUE file, never from YAML."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from connectors.elasticsearch.config import ElasticsearchConfig
from connectors.errors import ConfigError

Credentials = dict[str, str | tuple[str, str]]


def read_credentials(config: ElasticsearchConfig, environ: Mapping[str, str]) -> Credentials:
    """`{"api_key": ...}` or `{"basic_auth": (user, password)}` or `{}`.

    The file, when configured, holds lines `API_KEY=...` or `USERNAME=...`/`PASSWORD=...`;
    the environment variables win over it.
    """
    values = _file_values(config.credentials_file) if config.credentials_file else {}
    api_key = environ.get(config.api_key_env) or values.get("API_KEY")
    username = environ.get(config.username_env) or values.get("USERNAME")
    password = environ.get(config.password_env) or values.get("PASSWORD")
    if api_key:
        return {"api_key": api_key}
    if username and password:
        return {"basic_auth": (username, password)}
    if username or password:
        raise ConfigError("search.elasticsearch.credentials", "<hidden>",
                          "a username needs a password and a password needs a username")
    return {}


def _file_values(path: str) -> dict[str, str]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError("search.elasticsearch.credentials-file", path,
                          f"cannot be read ({error.strerror})") from None
    values = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and not line.lstrip().startswith("#"):
            values[key.strip().upper()] = value.strip()
    return values
