"""The adapters' one retry loop: every request to a search service goes through `retry_each`,
under one `RetryPolicy`, with every request and retry reported. What a failure means (retry,
reject, a timeout, a 404) is the adapter's to say, through the `Classify` it passes in; this
module knows no client."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, ClassVar, Generic, TypeVar

from connectors.events import BACKOFF_MS, REQUEST_FAILURES, REQUESTS, RETRIES, EventHook
from connectors.events import ignore_event as ignore_event
from core.errors import (
    KnowledgeSearchError,
    SearchRejectedError,
    SearchUnavailableError,
    redact,
)
from core.params import PARAMS_CONFIG, Bound, Real, Whole, check_bounds

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded attempts with exponential backoff and full jitter. Settings:
    `search.elasticsearch.{max-attempts, initial-backoff, max-backoff}`."""

    __pydantic_config__: ClassVar = PARAMS_CONFIG

    max_attempts: Annotated[Whole, Bound("search.elasticsearch.max-attempts", ge=1, le=20)] = 4
    initial_backoff: Annotated[Real, Bound("search.elasticsearch.initial-backoff", ge=0)] = 0.2
    max_backoff: Annotated[Real, Bound("search.elasticsearch.max-backoff", ge=0)] = 5.0

    def __post_init__(self) -> None:
        check_bounds(self)
V = TypeVar("V")


@dataclass(frozen=True)
class Done(Generic[V]):
    """The item succeeded, with this value."""

    value: V


@dataclass(frozen=True)
class Retry:
    """The item failed in a way that another attempt may mend."""

    reason: str


@dataclass(frozen=True)
class Reject:
    """The item failed in a way that no attempt can mend."""

    reason: str


ItemOutcome = Done[V] | Retry | Reject
Send = Callable[[list[K]], Mapping[K, ItemOutcome[V]]]
"""Makes one request for a group of items and says how each one fared."""


def backoff_seconds(policy: RetryPolicy, attempt: int, rng: random.Random) -> float:
    """Full-jitter exponential backoff before retry number `attempt` (1-based)."""
    ceiling = min(policy.max_backoff, policy.initial_backoff * (2 ** (attempt - 1)))
    return rng.uniform(0, ceiling)


@dataclass(frozen=True)
class Failed:
    """What a request that raised means for every item in it: retry or reject them; whether it
    timed out (its group may then be split); whether it was a 404 (raised to callers that ask
    "does it exist?", otherwise a rejection)."""

    outcome: Retry | Reject
    timed_out: bool = False
    not_found: bool = False


Classify = Callable[[Exception], Failed | None]
"""An adapter's reading of an exception its client raised; None for one that is no failed
request (a bug), which propagates."""


@dataclass
class _Group(Generic[K]):
    """Items sent in one request; `pair` names the split that made it (None: not a half)."""

    items: list[K]
    splittable: bool = True
    pair: int | None = None


def retry_each(items: Sequence[K], send: Send[K, V], policy: RetryPolicy, *, what: str,
               hosts: Sequence[str], classify: Classify, on_event: EventHook = ignore_event,
               sleep: Callable[[float], None] = time.sleep, rng: random.Random | None = None,
               split_timeouts: bool = False, raise_not_found: bool = False
               ) -> dict[K, V | KnowledgeSearchError]:
    """Sends `items` through `send`, each item at most `policy.max_attempts` times.

    A request that raises is the same outcome for every item in it. Retried items wait one
    backoff per round (one `backend_retries`). With `split_timeouts`, a group whose request timed
    out is sent again at once in two halves, spending no attempt, so that one heavy item is
    isolated and fails alone; when both halves of a split time out too, the server is stalled,
    not one item heavy: their items spend an attempt and are not split again. A stalled server
    thus costs at most 3 + (max_attempts - 1) timed-out requests per batch.

    Returns:
        Per item: its value, a SearchRejectedError (no attempt can mend it) or a
        SearchUnavailableError (attempts spent), naming `what`, the hosts and every error.

    Raises:
        Exception: with `raise_not_found`, a request answered 404 (as the client raised it:
            callers ask "does it exist?").
    """
    rng, where = rng or random.Random(), f"{what} on {list(hosts)}"
    history: dict[K, list[str]] = {item: [] for item in items}
    spent: dict[K, int] = dict.fromkeys(items, 0)
    results: dict[K, V | KnowledgeSearchError] = {}
    groups = [_Group(list(items), split_timeouts)] if items else []
    rounds = pairs = 0

    def spend(item: K, outcome: Retry | Reject) -> bool:
        """Spends one of `item`'s attempts; True when it may be tried again."""
        spent[item] += 1
        if isinstance(outcome, Reject) or spent[item] >= policy.max_attempts:
            on_event(REQUEST_FAILURES, 1)
            results[item] = _final_error(outcome, where, spent[item], history[item])
            return False
        return True

    while groups:
        rounds += 1
        timed_out: list[_Group[K]] = []
        retried: list[K] = []
        for group in groups:
            on_event(REQUESTS, 1)
            outcomes, timeout = _sent(send, group.items, classify, raise_not_found)
            failed = []
            for item in group.items:
                outcome = outcomes[item]
                if isinstance(outcome, Done):
                    results[item] = outcome.value
                    continue
                history[item].append(outcome.reason)
                failed.append((item, outcome))
            if timeout and group.splittable and len(failed) > 1:
                timed_out.append(_Group([item for item, _ in failed], True, group.pair))
                continue
            retried += [item for item, outcome in failed if spend(item, outcome)]
        stalled = _stalled_pairs(timed_out)
        groups = []
        for group in timed_out:
            if group.pair in stalled:
                retried += [item for item in group.items if spend(item, Retry(""))]
                continue
            pairs += 1
            middle = len(group.items) // 2
            groups += [_Group(group.items[:middle], True, pairs),
                       _Group(group.items[middle:], True, pairs)]
        if retried:
            seconds = backoff_seconds(policy, rounds, rng)
            on_event(RETRIES, 1)
            on_event(BACKOFF_MS, int(seconds * 1000))
            sleep(seconds)
            groups.append(_Group(retried, splittable=False))
    return {item: results[item] for item in items}


def _stalled_pairs(timed_out: list[_Group[K]]) -> set[int]:
    """The splits both of whose halves timed out."""
    halves = [group.pair for group in timed_out if group.pair is not None]
    return {pair for pair in halves if halves.count(pair) == 2}


def call_with_retries(call: Callable[[], V], policy: RetryPolicy, what: str,
                      hosts: Sequence[str], *, classify: Classify,
                      on_event: EventHook = ignore_event,
                      sleep: Callable[[float], None] = time.sleep,
                      rng: random.Random | None = None) -> V:
    """One request under the retry policy (`retry_each` with one item).

    A 404 is raised as it is (callers ask "does it exist?"). Raises SearchRejectedError for
    an error that retrying cannot mend, and SearchUnavailableError naming `what`, the hosts
    and every error once the attempts are spent.
    """
    (result,) = retry_each([0], lambda _: {0: Done(call())}, policy, what=what, hosts=hosts,
                           classify=classify, on_event=on_event, sleep=sleep, rng=rng,
                           raise_not_found=True).values()
    if isinstance(result, KnowledgeSearchError):
        raise result
    return result


def _sent(send: Send[K, V], group: list[K], classify: Classify, raise_not_found: bool
          ) -> tuple[Mapping[K, ItemOutcome[V]], bool]:
    try:
        return send(group), False
    except Exception as error:
        failed = classify(error)
        if failed is None or (failed.not_found and raise_not_found):
            raise
        return dict.fromkeys(group, failed.outcome), failed.timed_out


def _final_error(outcome: Retry | Reject, where: str, attempts: int, history: list[str]
                 ) -> KnowledgeSearchError:
    if isinstance(outcome, Reject):
        return SearchRejectedError(redact(f"{where}: {outcome.reason}"))
    return SearchUnavailableError(redact(
        f"{where} failed after {attempts} attempts; last error: {history[-1]}; "
        f"earlier: {history[:-1]}"))
