"""A step whose slow call for an element runs on worker threads while the step's own thread
answers the elements before it and reads the next ones.

Recall spends most of a bulk run in its search port. On the step's thread the rest of the fused
pipeline (parsing the next queries, the steps after recall, the sinks) waits for each search,
and the search for them. A port that can be searched from several threads at once says how
many (`parallel_calls`); with that many calls in flight, each on a worker thread prepared for
it (`worker_started`: the embedded store makes faiss use one core per call there), the searches
and the Python around them share the machine's cores. Outputs keep the elements' order; the
last elements' are given when the bundle ends. What a call counts is counted on the step's
thread (Beam's metrics belong to it), and what it raises fails its own element. With fewer
than two calls allowed, each element is answered on the step's thread, as any GuardedDoFn.

A step that `gathers` n takes its input one by one and makes each n (per window, in order) one
element: the batching of Beam's `BatchElements` without a step of its own, whose output lists
Beam would pickle whole, query by query, to sample their size (docs/benchmarks.md).
"""

from __future__ import annotations

from abc import abstractmethod
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, NamedTuple

import apache_beam as beam
from apache_beam import pvalue
from apache_beam.utils.windowed_value import WindowedValue

from stages.support import counters
from stages.support.dead_letters import routed
from stages.support.per_query import FAILED, GuardedDoFn, failed_element


class _InFlight(NamedTuple):
    element: Any
    call: Future[tuple[Any, dict[str, int]]]
    window: Any
    timestamp: Any


def _held_counts(call: Callable[[], Any]) -> tuple[Any, dict[str, int]]:
    with counters.held() as counts:
        return call(), counts


class LookAheadDoFn(GuardedDoFn):
    """Subclasses implement `started` (on the step's thread: the call an element needs),
    `finished` (on the step's thread: the element's outputs and DeadLetters from the call's
    result), `parallel_calls` and `worker_started`. Without Beam, `answers` does both on
    the calling thread."""

    _worker: ThreadPoolExecutor | None = None
    _in_flight: deque[_InFlight] | None = None
    _gathering: dict[Any, list[Any]] | None = None

    @abstractmethod
    def started(self, element: Any) -> Callable[[], Any]:
        """The call `element` needs, run on a worker thread."""

    @abstractmethod
    def finished(self, element: Any, result: Any) -> Iterable[Any]:
        """`element`'s outputs and DeadLetters, from what its call returned."""

    def parallel_calls(self) -> int:
        """How many calls may run at once (below 2: none on a worker thread)."""
        return 0

    def worker_started(self) -> None:
        """Prepares a worker thread, before its first call."""

    def gathers(self) -> int:
        """How many inputs make one element (a list); 0: each input is an element."""
        return 0

    def answers(self, element: Any, *side_inputs: Any) -> Iterable[Any]:
        return self.finished(element, self.started(element)())

    def start_bundle(self) -> None:
        self._in_flight = deque()
        self._gathering = {}

    def process(self, element: Any, window: Any = beam.DoFn.WindowParam,
                timestamp: Any = beam.DoFn.TimestampParam) -> Iterator[Any]:
        """Starts `element`'s call (or, when it `gathers`, the call of the list it completes);
        gives the outputs of the elements whose calls are done once as many are in flight
        as may be."""
        size = self.gathers()
        if not size:
            yield from self._started(element, window, timestamp)
            return
        if self._gathering is None:
            self._gathering = {}
        gathered = self._gathering.setdefault(window, [])
        gathered.append(element)
        if len(gathered) >= size:
            del self._gathering[window]
            yield from self._started(gathered, window, window.max_timestamp())

    def _started(self, element: Any, window: Any, timestamp: Any, in_flight: int = 0
                 ) -> Iterator[Any]:
        """Starts `element`'s call; its outputs, or those of the elements before it whose
        calls are done, each in its element's window. Up to `in_flight` calls (at least as
        many as may run at once) are left in flight."""
        calls = self.parallel_calls()
        if calls < 2:
            yield from _windowed(super().process(element), window, timestamp)
            return
        try:
            call = self.started(element)
        except Exception as error:
            if not self._guarded:
                raise
            yield pvalue.TaggedOutput(FAILED, WindowedValue(failed_element(element, error),
                                                            timestamp, (window,)))
            return
        if self._worker is None:
            self._worker = ThreadPoolExecutor(calls, type(self).__name__, self.worker_started)
        if self._in_flight is None:
            self._in_flight = deque()
        self._in_flight.append(_InFlight(element, self._worker.submit(_held_counts, call),
                                         window, timestamp))
        while len(self._in_flight) > max(calls, in_flight):  # every worker busy meanwhile
            done = self._in_flight.popleft()
            yield from _windowed(self._outputs(done), done.window, done.timestamp)

    def finish_bundle(self) -> Iterator[Any]:
        gathering, self._gathering = self._gathering or {}, {}
        calls = self.parallel_calls()
        for window, gathered in gathering.items():
            # with workers, the last list is cut into small shares, all started at once, that
            # they take as each frees: on one worker, the others would wait for it idle
            shares = _shares(gathered, _SHARES_PER_CALL * calls) if calls > 1 else [gathered]
            for part in shares:
                yield from self._started(part, window, window.max_timestamp(),
                                         in_flight=len(shares) + calls)
        while self._in_flight:
            last = self._in_flight.popleft()
            yield from _windowed(self._outputs(last), last.window, last.timestamp)

    def _outputs(self, done: _InFlight) -> Iterator[Any]:
        try:
            result, counts = done.call.result()
            counters.count_all(counts)
            outputs = list(self.finished(done.element, result))
        except Exception as error:
            if not self._guarded:
                raise
            yield pvalue.TaggedOutput(FAILED, failed_element(done.element, error))
            return
        yield from routed(outputs)

    def teardown(self) -> None:
        if self._worker is not None:
            self._worker.shutdown(wait=True)
            self._worker = None
        super().teardown()

    def __getstate__(self) -> dict[str, Any]:
        given = super().__getstate__()
        state = dict(given) if isinstance(given, dict) else dict(self.__dict__)
        for held in ("_worker", "_in_flight", "_gathering"):
            state.pop(held, None)
        return state


_SHARES_PER_CALL = 4


def _shares(gathered: list[Any], calls: int) -> list[list[Any]]:
    """`gathered` cut into `calls` lists of nearly equal length, in order."""
    parts = min(max(calls, 1), len(gathered))
    size, more = divmod(len(gathered), parts)
    cuts = [i * size + min(i, more) for i in range(parts + 1)]
    return [gathered[cuts[i]:cuts[i + 1]] for i in range(parts)]


def _windowed(outputs: Iterable[Any], window: Any, timestamp: Any) -> Iterator[Any]:
    """`outputs` (values and TaggedOutputs) placed in `window` at `timestamp`: what a step
    gives outside the element it was given (a bundle's end, a list it gathered)."""
    for output in outputs:
        if isinstance(output, pvalue.TaggedOutput):
            if not isinstance(output.value, WindowedValue):
                output = pvalue.TaggedOutput(output.tag, WindowedValue(output.value, timestamp,
                                                                       (window,)))
            yield output
        elif isinstance(output, WindowedValue):
            yield output
        else:
            yield WindowedValue(output, timestamp, (window,))
