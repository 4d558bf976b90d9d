"""The BM25 statistics of an index for the words of some texts, as the index analyses and
counts them: what a lexical list's bound is raised by from one night to the next (see
`connectors.embedded.lexical_bound`, whose formula is Lucene's, the one Elasticsearch scores
with).

Each distinct text is analysed by the content field's analyzer (`_analyze`, a few requests at
a time); the document frequencies of their words are read from artificial documents, each the
texts of a group joined by spaces (`_mtermvectors` with `term_statistics`), which the same
analyzer splits into the same words: one artificial document per text costs as much as a
search on some servers. A text whose words the joined document does not hold (an analyzer
whose words depend on their neighbours) is left out of `terms`, and its query is then recalled
in full."""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Any

from elasticsearch import Elasticsearch

from connectors.elasticsearch.client import index_settings
from connectors.elasticsearch.config import ElasticsearchConfig
from connectors.elasticsearch.failures import not_an_answer
from connectors.elasticsearch.retry import call_with_retries
from connectors.embedded.lexical_bound import LexicalStatistics
from core.errors import SearchUnavailableError

TEXTS_PER_DOCUMENT = 200
DOCUMENTS_PER_REQUEST = 10
ANALYSED_AT_ONCE = 8
"""`_analyze` requests in flight: one text each (an array's words cannot be told apart)."""


@dataclass(frozen=True)
class TextTerms:
    """The statistics of the index for every word of the texts asked (`statistics`), and the
    words each text is analysed into (`terms`)."""

    statistics: LexicalStatistics
    terms: dict[str, tuple[str, ...]]


def term_statistics(client: Elasticsearch, config: ElasticsearchConfig,
                    texts: Iterable[str]) -> TextTerms:
    """Each distinct text analysed by the content field's analyzer, and the index's document
    frequency of each of their words, chunk count (documents with content) and mean content
    length in words.

    Raises:
        KnowledgeSearchError: a request kept failing, or its answer is not the API's.
    """
    distinct = list(dict.fromkeys(texts))
    with ThreadPoolExecutor(ANALYSED_AT_ONCE) as pool:
        analysed = dict(zip(distinct, pool.map(partial(_words, client, config), distinct),
                            strict=True))
    frequencies: dict[str, int] = {}
    fields: dict[str, Any] = {}
    groups = [" ".join(distinct[at:at + TEXTS_PER_DOCUMENT])
              for at in range(0, len(distinct), TEXTS_PER_DOCUMENT)]
    for at in range(0, len(groups), DOCUMENTS_PER_REQUEST):
        for found in _term_vectors(client, config, groups[at:at + DOCUMENTS_PER_REQUEST]):
            fields = found.get("field_statistics") or fields
            for term, counted in (found.get("terms") or {}).items():
                frequencies[term] = int(counted.get("doc_freq") or 0)
    chunks, total_length = int(fields.get("doc_count", 0)), int(fields.get("sum_ttf", 0))
    terms = {text: words for text, words in analysed.items()
             if all(word in frequencies for word in words)}
    return TextTerms(LexicalStatistics(chunks, total_length / chunks if chunks else 0.0,
                                       frequencies), terms)


def shard_count(client: Elasticsearch, config: ElasticsearchConfig) -> int:
    """How many primary shards the index has: each scores BM25 with its own statistics."""
    return max(int(found["number_of_shards"]) for found in index_settings(client, config))


def _words(client: Elasticsearch, config: ElasticsearchConfig, text: str) -> tuple[str, ...]:
    body = call_with_retries(partial(_analyze, client, config, text), config.retry,
                             f"analysing a text with {config.index!r}", config.hosts)
    tokens = body.get("tokens") if isinstance(body, dict) else None
    if not isinstance(tokens, list):
        raise SearchUnavailableError(not_an_answer("_analyze", body))
    return tuple(dict.fromkeys(str(token["token"]) for token in tokens))


def _analyze(client: Elasticsearch, config: ElasticsearchConfig, text: str) -> Any:
    return client.indices.analyze(index=config.index, field=config.content_field,
                                  text=text).body


def _term_vectors(client: Elasticsearch, config: ElasticsearchConfig, documents: list[str]
                  ) -> list[dict[str, Any]]:
    """The content field's term vectors of each artificial document (its words' document
    frequencies, the field's statistics)."""
    field = config.content_field
    docs = [{"doc": {field: text}, "fields": [field], "term_statistics": True,
             "field_statistics": True, "positions": False, "offsets": False}
            for text in documents]
    body = call_with_retries(partial(_mtermvectors, client, config.index, docs), config.retry,
                             f"the term statistics of {config.index!r}", config.hosts)
    answers = body.get("docs") if isinstance(body, dict) else None
    if not isinstance(answers, list) or len(answers) != len(documents):
        raise SearchUnavailableError(not_an_answer("_mtermvectors", body))
    return [_field(answer, field) for answer in answers]


def _mtermvectors(client: Elasticsearch, index: str, docs: list[dict[str, Any]]) -> Any:
    return client.mtermvectors(index=index, docs=docs).body


def _field(answer: Any, field: str) -> dict[str, Any]:
    if not isinstance(answer, dict) or "error" in answer:
        raise SearchUnavailableError(not_an_answer("_mtermvectors", answer))
    found = (answer.get("term_vectors") or {}).get(field)
    return found if isinstance(found, dict) else {}
