"""Loads Settings from layers, declared once: defaults < YAML file < environment < --set."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from connectors.errors import ConfigError
from pipeline.settings import Settings

ENV_PREFIX = "RAG_EVIDENCE__"


def load_settings(config_path: str | Path | None = None,
                  environ: Mapping[str, str] | None = None,
                  overrides: Iterable[str] = ()) -> Settings:
    """Merges the layers in precedence order and validates the result once.

    Raises:
        ConfigError: a file that is not a YAML mapping, a malformed override, an unknown key
            (with the nearest valid key suggested), or a value out of range.
    """
    merged: dict[str, Any] = {}
    for layer in (_file_layer(config_path), _env_layer(environ or {}), _cli_layer(overrides)):
        _deep_merge(merged, layer)
    try:
        return Settings.model_validate(merged)
    except ValidationError as error:
        raise _config_error(error, merged) from None


def _file_layer(path: str | Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigError("--config", str(path), f"cannot be read ({error.strerror})") from None
    except yaml.YAMLError as error:
        raise ConfigError("--config", str(path), f"is not valid YAML ({error})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError("--config", str(path), "must hold a YAML mapping of settings")
    return data


def _env_layer(environ: Mapping[str, str]) -> dict[str, Any]:
    layer: dict[str, Any] = {}
    for name, value in environ.items():
        if name.startswith(ENV_PREFIX):
            parts = [p.lower().replace("_", "-") for p in name[len(ENV_PREFIX):].split("__")]
            _set_path(layer, parts, _scalar(value))
    return layer


def _cli_layer(overrides: Iterable[str]) -> dict[str, Any]:
    layer: dict[str, Any] = {}
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError("--set", item, "must look like key.path=value")
        _set_path(layer, key.strip().split("."), _scalar(value))
    return layer


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


def _deep_merge(base: dict[str, Any], layer: Mapping[str, Any]) -> None:
    for key, value in layer.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _deep_merge(base[key], value)
        else:
            base[key] = value


def _config_error(error: ValidationError, merged: Mapping[str, Any]) -> ConfigError:
    first = error.errors()[0]
    loc = [str(p) for p in first["loc"]]
    key = ".".join(loc)
    value = first.get("input")
    if first["type"] == "extra_forbidden":
        hint = _nearest_key(loc)
        reason = f"unknown key; did you mean {hint!r}?" if hint else "unknown key"
        return ConfigError(key, value, reason)
    return ConfigError(key, value, first["msg"])


def _nearest_key(loc: list[str]) -> str | None:
    model: type[BaseModel] = Settings
    for part in loc[:-1]:
        fields = {f.alias or n: f for n, f in model.model_fields.items()}
        annotation = fields[part].annotation if part in fields else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return None
        model = annotation
    names = [f.alias or n for n, f in model.model_fields.items()]
    match = difflib.get_close_matches(loc[-1], names, n=1, cutoff=0.4)
    return ".".join([*loc[:-1], match[0]]) if match else None
