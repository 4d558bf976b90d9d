"""Equality filters over chunk metadata, with a lazily built inverted index per field."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np


class FilterIndex:
    """Finds the rows whose metadata match every `{field: value}` filter.

    A list filter value matches any of its items (like Elasticsearch `terms`); a list
    metadata value matches when any of its items matches (like an Elasticsearch array).
    Booleans never equal numbers, unlike in Python.
    """

    def __init__(self, metadata: Callable[[], Iterable[Mapping[str, Any]]]) -> None:
        """`metadata` yields every row's metadata in row order; it is read once per field
        filtered on, the first time."""
        self._metadata = metadata
        self._fields: dict[str, dict[tuple[str, Any], np.ndarray]] = {}

    def matching_rows(self, filters: Mapping[str, Any]) -> np.ndarray | None:
        """Returns the sorted matching row numbers, or None when there are no filters."""
        if not filters:
            return None
        rows: np.ndarray | None = None
        for field, wanted in filters.items():
            index = self._field(field)
            values = wanted if isinstance(wanted, list) else [wanted]
            hits = [index.get(_key(v), _EMPTY) for v in values]
            field_rows = np.unique(np.concatenate(hits)) if hits else _EMPTY
            rows = field_rows if rows is None else np.intersect1d(rows, field_rows)
        return rows

    def _field(self, field: str) -> dict[tuple[str, Any], np.ndarray]:
        if field not in self._fields:
            postings: dict[tuple[str, Any], list[int]] = defaultdict(list)
            for row, metadata in enumerate(self._metadata()):
                value = metadata.get(field)
                for item in value if isinstance(value, list) else [value]:
                    if _is_scalar(item):
                        postings[_key(item)].append(row)
            self._fields[field] = {k: np.asarray(v, dtype=np.int64) for k, v in postings.items()}
        return self._fields[field]


_EMPTY = np.zeros(0, dtype=np.int64)


def _is_scalar(value: object) -> bool:
    return isinstance(value, (str, int, float, bool))


def _key(value: object) -> tuple[str, Any]:
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (int, float)):
        return ("number", value)
    return ("text", value)
