"""Progress where a person waits: a bar on a terminal (tqdm: count, rate, and time left when the
total is known), a log line every few seconds otherwise (a worker of a distributed runner, a
log file)."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterator
from typing import Any

import apache_beam as beam

_log = logging.getLogger("rag_evidence.progress")
EVERY_SECONDS = 10.0


class Progress:
    """Counts `what` done by this worker and shows it; `close` when done.

    Usage::

        progress = Progress("texts embedded", total=2_000)
        progress.add(64)
    """

    def __init__(self, what: str, total: int | None = None,
                 every_seconds: float | None = None, terminal: bool | None = None) -> None:
        self._what, self._total = what, total
        self._every = EVERY_SECONDS if every_seconds is None else every_seconds
        self._done = 0
        self._next_line = time.monotonic() + self._every
        self._bar: Any = None
        if sys.stderr.isatty() if terminal is None else terminal:
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=what, unit="", dynamic_ncols=True,
                             mininterval=0.5, leave=True, file=sys.stderr)

    def add(self, count: int = 1) -> None:
        self._done += count
        if self._bar is not None:
            self._bar.update(count)
            return
        now = time.monotonic()
        if now >= self._next_line:
            self._next_line = now + self._every
            of = f" of {self._total}" if self._total is not None else ""
            _log.info("progress: %d%s %s by this worker", self._done, of, self._what)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


class _ProgressDoFn(beam.DoFn):
    def __init__(self, what: str, total: int | None, every_seconds: float | None) -> None:
        self._what, self._total, self._every = what, total, every_seconds
        self._progress: Progress | None = None

    def setup(self) -> None:
        self._progress = Progress(self._what, self._total, self._every)

    def process(self, element: Any) -> Iterator[Any]:
        if self._progress is not None:
            self._progress.add()
        yield element

    def teardown(self) -> None:
        if self._progress is not None:
            self._progress.close()

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_progress": None}


class LogProgress(beam.PTransform[beam.PCollection[Any], beam.PCollection[Any]]):
    """Passes elements through, showing a running count per worker (see `Progress`).

    Usage::

        results = results | LogProgress("queries answered", total=20_000)
    """

    def __init__(self, what: str = "queries answered", total: int | None = None,
                 every_seconds: float | None = None) -> None:
        super().__init__()
        self._fn = _ProgressDoFn(what, total, every_seconds)

    def expand(self, pcoll: beam.PCollection[Any]) -> beam.PCollection[Any]:
        return pcoll | "LogProgress" >> beam.ParDo(self._fn)
