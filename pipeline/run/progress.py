"""A progress line on long runs: each worker logs its count every few seconds."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

import apache_beam as beam

_log = logging.getLogger("rag_evidence.progress")


class _ProgressDoFn(beam.DoFn):
    def __init__(self, every_seconds: float) -> None:
        self._every = every_seconds
        self._seen = 0
        self._next_log = 0.0

    def setup(self) -> None:
        self._seen = 0
        self._next_log = time.monotonic() + self._every

    def process(self, element: Any) -> Iterator[Any]:
        self._seen += 1
        now = time.monotonic()
        if now >= self._next_log:
            self._next_log = now + self._every
            _log.info("progress: %d queries answered by this worker", self._seen)
        yield element


EVERY_SECONDS = 10.0


class LogProgress(beam.PTransform[beam.PCollection[Any], beam.PCollection[Any]]):
    """Passes elements through, logging a running count every `every_seconds` (default
    `EVERY_SECONDS`) per worker."""

    def __init__(self, every_seconds: float | None = None) -> None:
        super().__init__()
        self._every = EVERY_SECONDS if every_seconds is None else every_seconds

    def expand(self, pcoll: beam.PCollection[Any]) -> beam.PCollection[Any]:
        return pcoll | "LogProgress" >> beam.ParDo(_ProgressDoFn(self._every))
