"""The checks a run makes once, in the driver, before any worker starts."""

from __future__ import annotations

import difflib
import logging
from collections.abc import Callable

from connectors.embedder_port import EmbedderFactory, EmbedderInfo
from connectors.search_port import PortFactory
from core.errors import DimensionMismatchError, EmbedderMismatchError, RagEvidenceError
from pipeline.io.query_source import QuerySource
from pipeline.run.query_parse import parse_query_line
from stages.embed import needs_embedding
from stages.models import Query

PEEK_LINES = 1000
_log = logging.getLogger(__name__)


def preflight(port_factory: PortFactory, embedder_factory: EmbedderFactory | None,
              queries: QuerySource | None = None,
              describe: Callable[[], EmbedderInfo] | None = None, store: str = "the store"
              ) -> RagEvidenceError | None:
    """Opens the port once (a missing store or unreachable cluster raises here), then checks
    that the configured embedder can embed queries for this store (`store` names it). A
    filter key among the first `PEEK_LINES` queries that no stored chunk carries is warned of
    (where the store knows its chunks' metadata keys).

    `embedder_factory` is None when nothing will be embedded (lexical recall); `describe`, when
    given, says what it is without building it (a model is then not loaded here). An embedder
    that cannot serve the store (no model, another model, another dimension) stops the run
    when the first `PEEK_LINES` queries hold a text to embed; otherwise the run goes on, the
    problem is logged, and returned so that text queries further on become dead letters.

    Raises:
        KnowledgeSearchError: the store or cluster cannot be opened.
        RagEvidenceError: the embedder cannot serve the store, and text queries come soon.
    """
    port = port_factory()
    try:
        dimension, recorded = port.dimension, port.embedder
        stored_keys: frozenset[str] | None = getattr(port, "metadata_keys", None)
    finally:
        port.close()
    ahead = _first_queries(queries) if queries is not None else None
    if stored_keys is not None and ahead is not None:
        _warn_on_filters_that_match_nothing(ahead, stored_keys, store)
    if embedder_factory is None:
        return None
    configured: EmbedderInfo | None = None
    try:
        configured = describe() if describe is not None else embedder_factory().info
        problem = embedder_problem(configured, dimension, recorded, store)
    except RagEvidenceError as error:
        problem = error
    text_ahead = ahead is None or any(needs_embedding(query) for _, query in ahead)
    if problem is None:
        if recorded is None and configured is not None and text_ahead:
            _log.warning("%s does not record the embedder that built it (indexes written by "
                         "LangChain, LlamaIndex or Haystack never do): text queries are embedded "
                         "with %s, which must be that one", store,
                         configured.describe())
        return None
    if text_ahead:
        raise problem
    _log.warning("text queries will become dead letters: %s", problem)
    return problem


def embedder_problem(configured: EmbedderInfo, dimension: int, recorded: EmbedderInfo | None,
                     store: str = "the store") -> RagEvidenceError | None:
    """Why `configured` cannot embed queries for a store of `dimension` built by `recorded`."""
    if recorded is not None and not recorded.same_as(configured):
        return EmbedderMismatchError(store, recorded.describe(), configured.describe())
    if configured.dimension != dimension:
        return DimensionMismatchError("embedder.dim", configured.dimension, dimension)
    return None


def _first_queries(queries: QuerySource) -> list[tuple[int, Query]]:
    """The valid queries among the first `PEEK_LINES` lines, with their line numbers."""
    parsed = ((number, parse_query_line(number, text))
              for number, text in queries.first_records(PEEK_LINES))
    return [(number, query) for number, query in parsed if isinstance(query, Query)]


def _warn_on_filters_that_match_nothing(ahead: list[tuple[int, Query]],
                                        stored_keys: frozenset[str], store: str) -> None:
    unknown: dict[str, int] = {}
    for number, query in ahead:
        for key in query.filters:
            if key not in stored_keys:
                unknown.setdefault(key, number)
    for key, number in unknown.items():
        close = difflib.get_close_matches(key, sorted(stored_keys), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        _log.warning("filter key %r (first on line %d) is on no chunk of %s, so queries "
                     "filtering on it get no evidence; %sthe chunks carry: %s", key, number,
                     store, hint, ", ".join(sorted(stored_keys)) or "no metadata")
