"""The settings' keys as they are spelled, walked by path: for suggestions and for typing a
value by the field it sets."""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel

from core.params import kebab


def section_keys(section: Any) -> dict[str, Any]:
    """A section's keys as settings spell them, each with its annotation ({} for a value)."""
    if isinstance(section, type) and issubclass(section, BaseModel):
        return {f.alias or n: f.annotation for n, f in section.model_fields.items()}
    if isinstance(section, type) and dataclasses.is_dataclass(section):
        hints = typing.get_type_hints(section)
        return {kebab(f.name): hints[f.name] for f in dataclasses.fields(section)}
    return {}


def annotation_at(model: Any, path: Sequence[str]) -> Any:
    """The annotation of the key at `path` (None when there is no such key)."""
    annotation: Any = model
    for part in path:
        annotation = section_keys(annotation).get(part)
    return annotation


def is_text(annotation: Any) -> bool:
    """Whether a field holds text only (`str`, `str | None`, a Literal of strings): a value
    set from the command line or environment is then taken as it is written."""
    if annotation is str:
        return True
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return all(is_text(a) or a is type(None) for a in args) and str in args
    if typing.get_origin(annotation) is Literal:
        return all(isinstance(a, str) for a in args)
    return False
