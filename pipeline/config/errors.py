"""Config validation failures in plain words, each naming where its value came from."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from core.errors import ConfigError
from pipeline.config.fields import annotation_at, section_keys

UNKNOWN_KEY = ("extra_forbidden", "unexpected_keyword_argument")
"""How pydantic names an unknown key: of a model, of a dataclass."""

Provenance = dict[tuple[str, ...], str]
"""Where each key path was set: `file c.yaml`, `environment RAG_EVIDENCE__RAG__TOP_K`, `--set`."""


Folded = Mapping[tuple[str, ...], tuple[str, ...]]


def config_error(error: ValidationError, model: type[BaseModel], provenance: Provenance,
                 folded: Folded | None = None) -> ConfigError:
    """One ConfigError listing every failure as `key=value (from SOURCE): reason`; a key of a
    `folded` section is named as settings spell it, in its parent."""
    lines = [_line(item, model, provenance, folded or {}) for item in error.errors()]
    first = error.errors()[0]
    key = ".".join(_spelled([str(p) for p in first["loc"]], folded or {})) or "settings"
    value = None if first["type"] in UNKNOWN_KEY else first.get("input")
    return ConfigError.listing(key, value, lines)


def _spelled(loc: list[str], folded: Folded) -> list[str]:
    for section, parent in folded.items():
        if tuple(loc[:len(section)]) == section:
            return [*parent, *loc[len(section):]]
    return loc


def _line(item: ErrorDetails, model: type[BaseModel], provenance: Provenance,
          folded: Folded) -> str:
    loc = _spelled([str(p) for p in item["loc"]], folded)
    source = _source(loc, provenance)
    where = f" (from {source})" if source else ""
    shown = "" if item["type"] in UNKNOWN_KEY else f"={item.get('input')!r}"  # a secret, maybe
    return f"{'.'.join(loc)}{shown}{where}: {_plain(item, loc, model)}"


def _source(loc: list[str], provenance: Provenance) -> str | None:
    for end in range(len(loc), 0, -1):
        if tuple(loc[:end]) in provenance:
            return provenance[tuple(loc[:end])]
    return None


def _plain(item: ErrorDetails, loc: list[str], model: type[BaseModel]) -> str:
    kind, context = item["type"], item.get("ctx") or {}
    if kind in UNKNOWN_KEY:
        hint = nearest_key(loc, model)
        return f"unknown key; did you mean {hint!r}?" if hint else "unknown key"
    plain = {
        "int_type": "must be a whole number", "int_parsing": "must be a whole number",
        "int_from_float": "must be a whole number",
        "float_type": "must be a number", "float_parsing": "must be a number",
        "bool_type": "must be true or false", "bool_parsing": "must be true or false",
        "string_type": "must be text", "tuple_type": "must be a list",
        "list_type": "must be a list", "dict_type": "must be a mapping of keys",
        "model_type": "must be a section (a mapping of keys)",
        "model_attributes_type": "must be a section (a mapping of keys)",
        "greater_than_equal": f"must be at least {context.get('ge')}",
        "greater_than": f"must be more than {context.get('gt')}",
        "less_than_equal": f"must be at most {context.get('le')}",
        "literal_error": f"must be one of {context.get('expected')}",
        "missing": "is required",
    }
    if kind in plain:
        return plain[kind]
    return str(item["msg"]).removeprefix("Value error, ")


def nearest_key(loc: list[str], model: type[Any]) -> str | None:
    """The valid key closest to the unknown one at `loc`, spelled as a dotted path."""
    names = list(section_keys(annotation_at(model, loc[:-1])))
    match = difflib.get_close_matches(loc[-1], names, n=1, cutoff=0.4)
    return ".".join([*loc[:-1], match[0]]) if match else None


def leaf_paths(layer: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every key path of a nested mapping, sections and values alike."""
    paths = []
    for key, value in layer.items():
        path = (*prefix, str(key))
        paths.append(path)
        if isinstance(value, Mapping):
            paths += leaf_paths(value, path)
    return paths
