"""Reads Elasticsearch credentials from the environment or a KEY=VALUE file, never from YAML."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from connectors.elasticsearch.config import ElasticsearchConfig
from core.errors import ConfigError, register_secret

Credentials = dict[str, str | tuple[str, str]]


def read_credentials(config: ElasticsearchConfig, environ: Mapping[str, str]) -> Credentials:
    """`{"api_key": ...}` or `{"basic_auth": (user, password)}` or `{}`.

    The file, when configured, holds lines `API_KEY=...` or `USERNAME=...`/`PASSWORD=...`;
    the environment variables win over it.
    """
    values = _file_values(config.credentials_file) if config.credentials_file else {}
    api_key = _printable(config.api_key_env, "API_KEY", environ, values)
    username = _printable(config.username_env, "USERNAME", environ, values)
    password = _printable(config.password_env, "PASSWORD", environ, values)
    for secret in (api_key, password):
        if secret:
            register_secret(secret)
    if username and password:
        register_secret(f"{username}:{password}")
    if api_key:
        return {"api_key": api_key}
    if username and password:
        return {"basic_auth": (username, password)}
    if username or password:
        raise ConfigError("search.elasticsearch.credentials", "<hidden>",
                          "a username needs a password and a password needs a username")
    return {}


def _printable(variable: str, file_key: str, environ: Mapping[str, str],
               values: Mapping[str, str]) -> str | None:
    """The credential from the environment, else the file; one with a control character (a CR
    left by a Windows line ending, a newline) is an error that names where it came from and
    never shows it."""
    source, value = (variable, environ.get(variable)) if environ.get(variable) else (
        f"credentials-file {file_key}", values.get(file_key))
    if value and any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise ConfigError(source, "<hidden>", "holds a control character (a CR or newline "
                          "from the file it was copied from?); credentials must be printable")
    if value and not value.isascii():
        raise ConfigError(source, "<hidden>", "holds a character outside ASCII, which an HTTP "
                          "header cannot carry; credentials must be ASCII")
    return value


def _file_values(path: str) -> dict[str, str]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError("search.elasticsearch.credentials-file", path,
                          f"cannot be read ({error.strerror})") from None
    except UnicodeDecodeError:
        raise ConfigError("search.elasticsearch.credentials-file", path,
                          "is not UTF-8 text") from None
    values = {}
    for line in text.split("\n"):
        key, sep, value = line.partition("=")
        if sep and not line.lstrip().startswith("#"):
            values[key.strip().upper()] = value.strip(" \t")
    return values
