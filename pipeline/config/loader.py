"""Loads Settings from layers, declared once: defaults < YAML file < environment < --set."""

from __future__ import annotations

import typing
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from core.errors import ConfigError
from pipeline.config.errors import Provenance, config_error, leaf_paths
from pipeline.config.fields import annotation_at, is_text
from pipeline.config.settings import FOLDED, Settings

ENV_PREFIX = "RAG_EVIDENCE__"
MAX_CONFIG_BYTES = 1024 * 1024
_NULLS = ("null", "Null", "NULL", "~")


def load_settings(config_path: str | Path | None = None,
                  environ: Mapping[str, str] | None = None,
                  overrides: Iterable[str] = ()) -> Settings:
    """Merges the layers in precedence order and validates the result once.

    Args:
        config_path: a YAML settings file, or None for the defaults.
        environ: variables `RAG_EVIDENCE__SECTION__KEY` (for example
            `RAG_EVIDENCE__RAG__RETURN_N=8`); others are ignored.
        overrides: `key.path=value` strings, as `--set` takes them.

    Returns:
        The frozen, validated settings.

    Raises:
        ConfigError: a file that is not a YAML mapping, a malformed override, or every invalid
            value at once, each naming where it came from (an unknown key suggests the
            nearest valid one).

    >>> load_settings(overrides=["rag.return-n=8"]).rag.return_n
    8
    """
    merged: dict[str, Any] = {}
    provenance: Provenance = {}
    layers = [(_file_layer(config_path), f"file {config_path}"),
              *_env_layers(environ or {}), *_cli_layers(overrides)]
    for layer, source in layers:
        _deep_merge(merged, layer)
        provenance.update(dict.fromkeys(leaf_paths(layer), source))
    try:
        settings = Settings.model_validate(merged)
    except ValidationError as error:
        raise config_error(error, Settings, provenance, FOLDED) from None
    return settings


def _file_layer(path: str | Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    if Path(path).exists() and not Path(path).is_file():
        raise ConfigError("--config", str(path), "is not a regular file (a folder, a pipe or a "
                          "device); name a YAML file")
    try:
        text = _bounded_text(Path(path))
        data = yaml.safe_load(text)
    except OSError as error:
        raise ConfigError("--config", str(path), f"cannot be read ({error.strerror})") from None
    except UnicodeDecodeError:
        raise ConfigError("--config", str(path), "is not UTF-8 text") from None
    except yaml.YAMLError as error:
        raise ConfigError("--config", str(path), f"is not valid YAML ({error})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError("--config", str(path), "must hold a YAML mapping of settings")
    return data


def _bounded_text(path: Path) -> str:
    """The config file's text: at most MAX_CONFIG_BYTES, and no YAML alias (`*name`), whose
    nested expansion (an alias bomb) would take minutes and gigabytes to merge."""
    with path.open("rb") as handle:
        data = handle.read(MAX_CONFIG_BYTES + 1)
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError("--config", str(path), f"is larger than {MAX_CONFIG_BYTES} bytes")
    text = data.decode("utf-8")
    if any(isinstance(event, yaml.AliasEvent) for event in yaml.parse(text, yaml.SafeLoader)):
        raise ConfigError("--config", str(path), "uses a YAML alias (*name); write each "
                          "setting out instead")
    return text


def _env_layers(environ: Mapping[str, str]) -> list[tuple[dict[str, Any], str]]:
    """One layer per `RAG_EVIDENCE__...` variable, named after it."""
    layers = []
    for name, value in sorted(environ.items()):
        if name.startswith(ENV_PREFIX):
            layer: dict[str, Any] = {}
            parts = [p.lower().replace("_", "-") for p in name[len(ENV_PREFIX):].split("__")]
            _set_path(layer, parts, _typed(value, parts))
            layers.append((layer, f"environment {name}"))
    return layers


def _cli_layers(overrides: Iterable[str]) -> list[tuple[dict[str, Any], str]]:
    layers = []
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError("--set", item, "must look like key.path=value")
        layer: dict[str, Any] = {}
        parts = key.strip().split(".")
        _set_path(layer, parts, _typed(value, parts))
        layers.append((layer, "--set"))
    return layers


def _typed(text: str, path: list[str]) -> Any:
    """A value from the command line or environment, typed by the field it sets: a text field
    takes it as written (`query: `, `2024-01-01`; `null` where the field may be absent; a
    quoted YAML string unquoted), any other reads it as YAML."""
    annotation = annotation_at(Settings, path)
    quoted = len(text) >= 2 and text[0] == text[-1] and text[0] in "'\""
    if quoted or not is_text(annotation):
        return _scalar(text)
    return None if text in _NULLS and type(None) in typing.get_args(annotation) else text


def _scalar(text: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def _set_path(target: dict[str, Any], parts: list[str], value: Any) -> None:
    for depth, part in enumerate(parts[:-1], start=1):
        target = target.setdefault(part, {})
        if not isinstance(target, dict):
            raise ConfigError(".".join(parts[:depth]), target,
                              f"is a value, so {'.'.join(parts)} cannot be set under it")
    target[parts[-1]] = value


def _deep_merge(base: dict[str, Any], layer: Mapping[str, Any], at: str = "") -> None:
    for key, value in layer.items():
        path = f"{at}{key}"
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _deep_merge(base[key], value, f"{path}.")
        elif isinstance(value, dict) and value and key in base:
            raise ConfigError(path, base[key], f"is a value, so {path}.{next(iter(value))} "
                              "cannot be set under it")
        else:
            base[key] = value
