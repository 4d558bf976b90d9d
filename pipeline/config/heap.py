"""The job process's heap while a job runs."""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from contextlib import contextmanager

import apache_beam as beam
from apache_beam.runners.runner import PipelineResult


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Leaves the objects alive when a job starts (modules, settings, what the caller holds)
    out of the garbage collector's passes until it ends.

    A job allocates many short-lived containers (an `_msearch` answer is ~5,000 dicts), and each
    pass of the oldest generation also walks everything the process held before (what that
    costs: docs/benchmarks.md). Objects made during the job are collected as always; nesting
    is harmless (the inner end unfreezes all).
    """
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def run_to_completion(pipeline: beam.Pipeline) -> PipelineResult:
    """Runs `pipeline` and waits for it, within `frozen_heap`: how every job of ours runs."""
    with frozen_heap():
        result = pipeline.run()
        result.wait_until_finish()
    return result


def physical_memory() -> int:
    """This machine's memory in bytes."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
