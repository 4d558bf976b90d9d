"""The adapter's one retry loop: every request (info, mapping, `_msearch`, `_bulk`, refresh)
goes through `retry_each`, under one `RetryPolicy`, with every request and retry reported."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from elastic_transport import ConnectionTimeout, TransportError
from elasticsearch import ApiError, NotFoundError

from connectors.elasticsearch.config import RetryPolicy
from connectors.elasticsearch.failures import describe, is_retryable_exception
from connectors.errors import (
    KnowledgeSearchError,
    SearchRejectedError,
    SearchUnavailableError,
    redact,
)
from connectors.events import ES_BACKOFF_MS, ES_FAILURES, ES_REQUESTS, ES_RETRIES, EventHook
from connectors.events import ignore_event as ignore_event

K = TypeVar("K", bound=Hashable)
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


def outcome_of(error: TransportError | ApiError) -> Retry | Reject:
    """What a failed request means for each item in it."""
    return (Retry if is_retryable_exception(error) else Reject)(describe(error))


@dataclass
class _Group(Generic[K]):
    """Items sent in one request; `pair` names the split that made it (None: not a half)."""

    items: list[K]
    splittable: bool = True
    pair: int | None = None


def retry_each(items: Sequence[K], send: Send[K, V], policy: RetryPolicy, *, what: str,
               hosts: Sequence[str], on_event: EventHook = ignore_event,
               sleep: Callable[[float], None] = time.sleep, rng: random.Random | None = None,
               split_timeouts: bool = False, raise_not_found: bool = False
               ) -> dict[K, V | KnowledgeSearchError]:
    """Sends `items` through `send`, each item at most `policy.max_attempts` times.

    A request that raises is the same outcome for every item in it. Retried items wait one
    backoff per round (one `es_retries`). With `split_timeouts`, a group whose request timed
    out is sent again at once in two halves, spending no attempt, so that one heavy item is
    isolated and fails alone; when both halves of a split time out too, the server is stalled,
    not one item heavy: their items spend an attempt and are not split again. A stalled server
    thus costs at most 3 + (max_attempts - 1) timed-out requests per batch.

    Returns:
        Per item: its value, a SearchRejectedError (no attempt can mend it) or a
        SearchUnavailableError (attempts spent), naming `what`, the hosts and every error.

    Raises:
        NotFoundError: with `raise_not_found`, a request answered 404 (callers ask "does
            it exist?").
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
            on_event(ES_FAILURES, 1)
            results[item] = _final_error(outcome, where, spent[item], history[item])
            return False
        return True

    while groups:
        rounds += 1
        timed_out: list[_Group[K]] = []
        retried: list[K] = []
        for group in groups:
            on_event(ES_REQUESTS, 1)
            outcomes, timeout = _sent(send, group.items, raise_not_found)
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
            on_event(ES_RETRIES, 1)
            on_event(ES_BACKOFF_MS, int(seconds * 1000))
            sleep(seconds)
            groups.append(_Group(retried, splittable=False))
    return {item: results[item] for item in items}


def _stalled_pairs(timed_out: list[_Group[K]]) -> set[int]:
    """The splits both of whose halves timed out."""
    halves = [group.pair for group in timed_out if group.pair is not None]
    return {pair for pair in halves if halves.count(pair) == 2}


def call_with_retries(call: Callable[[], V], policy: RetryPolicy, what: str,
                      hosts: Sequence[str], *, on_event: EventHook = ignore_event,
                      sleep: Callable[[float], None] = time.sleep,
                      rng: random.Random | None = None) -> V:
    """One request under the retry policy (`retry_each` with one item).

    A 404 is raised as it is (callers ask "does it exist?"). Raises SearchRejectedError for
    an error that retrying cannot mend, and SearchUnavailableError naming `what`, the hosts
    and every error once the attempts are spent.
    """
    (result,) = retry_each([0], lambda _: {0: Done(call())}, policy, what=what, hosts=hosts,
                           on_event=on_event, sleep=sleep, rng=rng,
                           raise_not_found=True).values()
    if isinstance(result, KnowledgeSearchError):
        raise result
    return result


def _sent(send: Send[K, V], group: list[K], raise_not_found: bool
          ) -> tuple[Mapping[K, ItemOutcome[V]], bool]:
    try:
        return send(group), False
    except NotFoundError:
        if raise_not_found:
            raise
        return dict.fromkeys(group, Reject("HTTP 404 not found")), False
    except (TransportError, ApiError) as error:
        return dict.fromkeys(group, outcome_of(error)), isinstance(error, ConnectionTimeout)


def _final_error(outcome: Retry | Reject, where: str, attempts: int, history: list[str]
                 ) -> KnowledgeSearchError:
    if isinstance(outcome, Reject):
        return SearchRejectedError(redact(f"{where}: {outcome.reason}"))
    return SearchUnavailableError(redact(
        f"{where} failed after {attempts} attempts; last error: {history[-1]}; "
        f"earlier: {history[:-1]}"))
