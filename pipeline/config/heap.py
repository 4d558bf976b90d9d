"""The job process's heap while a job runs."""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import apache_beam as beam
from apache_beam.runners.portability.portable_runner import PortableRunner
from apache_beam.runners.runner import PipelineResult, PipelineState

from core.errors import WallTimeExceededError
from pipeline.config.engine_cancel import cancel_on_engine


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


def run_to_completion(pipeline: beam.Pipeline, max_wall_time: float | None = None
                      ) -> PipelineResult:
    """Runs `pipeline` and waits for it, within `frozen_heap`: how every job of ours runs.

    With `max_wall_time` (seconds), a job still running then is cancelled: a job on an engine
    (Flink, Spark, a job service) through its result's `cancel()`, and its submission or wait
    interrupted a few seconds later if the engine does not answer; a job in this process by
    interrupting it.

    Raises:
        WallTimeExceededError: the job ran past `max_wall_time` (it was cancelled).
    """
    with frozen_heap():
        try:
            if max_wall_time is None:
                result = pipeline.run()
                result.wait_until_finish()
                return result
            return _run_within(pipeline, max_wall_time)
        except BaseException:  # a job given up leaves nothing running on its engine
            cancel_on_engine(pipeline)
            raise


_GRACE_SECONDS = 5.0
"""How long past the limit a job on an engine is interrupted when cancelling it does not end
the wait."""


class _Expired(BaseException):
    """Raised in the main thread when a job's wall time is up (it ends a sleep or a blocking
    wait, as a signal does)."""


def _run_within(pipeline: beam.Pipeline, limit: float) -> PipelineResult:
    runner = type(pipeline.runner).__name__
    deadline = time.monotonic() + limit
    fired = threading.Event()

    def expire(signum: int, frame: object) -> None:
        fired.set()
        raise _Expired

    remote = isinstance(pipeline.runner, PortableRunner)
    alarm = threading.current_thread() is threading.main_thread()  # else: the wait alone
    if alarm:
        previous = signal.signal(signal.SIGALRM, expire)
        signal.setitimer(signal.ITIMER_REAL, limit + (_GRACE_SECONDS if remote else 0.0))
    result: PipelineResult | None = None
    try:
        result = pipeline.run()
        left = max(deadline - time.monotonic(), 0.001)
        state = result.wait_until_finish(duration=max(int(left * 1000), 1))
        if state in _TERMINAL and not fired.is_set():
            return result
    except BaseException:  # what a step raised is wrapped by Beam: the flag tells
        if not fired.is_set():
            raise
    finally:
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    if result is not None:
        threading.excepthook = _quiet_about_cancelled_waits(threading.excepthook)
        with contextlib.suppress(Exception):  # a runner that cannot cancel: the process ends
            result.cancel()
    raise WallTimeExceededError(limit, runner)


_WAIT_THREADS = ("wait_until_finish_read", "wait_until_finish_state_observer")
"""The threads of a portable runner's result that read the job's streams: cancelled, the job
service closes them, and they raise what the job's end already said."""


def _quiet_about_cancelled_waits(hook: Any) -> Any:
    """`hook`, silent for the wait threads (once: a process that cancels many jobs does not
    stack one wrapper per job)."""
    if getattr(hook, "quiet_about_cancelled_waits", False):
        return hook

    def quiet(args: threading.ExceptHookArgs) -> None:
        if args.thread is None or args.thread.name not in _WAIT_THREADS:
            hook(args)
    quiet.quiet_about_cancelled_waits = True  # type: ignore[attr-defined]
    return quiet


_TERMINAL = (PipelineState.DONE, PipelineState.FAILED, PipelineState.CANCELLED,
             PipelineState.UPDATED, PipelineState.DRAINED)


def physical_memory() -> int:
    """This machine's memory in bytes."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
