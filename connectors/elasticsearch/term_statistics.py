"""The BM25 statistics of an index for the words of some texts, as the index analyses and
counts them (`_mtermvectors` of artificial documents): what a lexical list's bound is raised
by from one night to the next (see `connectors.embedded.lexical_bound`, whose formula is
Lucene's, the one Elasticsearch scores with)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any

from elasticsearch import Elasticsearch

from connectors.elasticsearch.config import ElasticsearchConfig
from connectors.elasticsearch.failures import not_an_answer
from connectors.elasticsearch.retry import call_with_retries
from connectors.embedded.lexical_bound import LexicalStatistics
from core.errors import SearchUnavailableError

TEXTS_PER_REQUEST = 200


@dataclass(frozen=True)
class TextTerms:
    """The statistics of the index for every word of the texts asked (`statistics`), and the
    words each text is analysed into (`terms`)."""

    statistics: LexicalStatistics
    terms: dict[str, tuple[str, ...]]


def term_statistics(client: Elasticsearch, config: ElasticsearchConfig,
                    texts: Iterable[str]) -> TextTerms:
    """Each distinct text analysed by the content field's analyzer, and the index's document
    frequency of each of its words, chunk count (documents with content) and mean content
    length in words.

    Raises:
        KnowledgeSearchError: a request kept failing, or its answer is not `_mtermvectors`'s.
    """
    field, terms = config.content_field, {}
    frequencies: dict[str, int] = {}
    chunks, total_length = 0, 0
    distinct = iter(dict.fromkeys(texts))
    while batch := list(itertools.islice(distinct, TEXTS_PER_REQUEST)):
        docs = [{"doc": {field: text}, "fields": [field], "term_statistics": True,
                 "field_statistics": True, "positions": False, "offsets": False}
                for text in batch]
        body = call_with_retries(partial(_mtermvectors, client, config.index, docs),
                                 config.retry, f"the term statistics of {config.index!r}",
                                 config.hosts)
        answers = body.get("docs") if isinstance(body, dict) else None
        if not isinstance(answers, list) or len(answers) != len(batch):
            raise SearchUnavailableError(not_an_answer("_mtermvectors", body))
        for text, answer in zip(batch, answers, strict=True):
            vectors = _field(answer, field)
            found = vectors.get("terms") or {}
            terms[text] = tuple(found)
            for term, counted in found.items():
                frequencies[term] = int(counted.get("doc_freq") or 0)
            fields = vectors.get("field_statistics")
            if isinstance(fields, dict):
                chunks, total_length = int(fields["doc_count"]), int(fields["sum_ttf"])
    mean = total_length / chunks if chunks else 0.0
    return TextTerms(LexicalStatistics(chunks, mean, frequencies), terms)


def shard_count(client: Elasticsearch, config: ElasticsearchConfig) -> int:
    """How many primary shards the index has: each scores BM25 with its own statistics."""
    body = call_with_retries(lambda: client.indices.get_settings(index=config.index).body,
                             config.retry, f"the settings of {config.index!r}", config.hosts)
    for settings in (body or {}).values():
        return int(settings["settings"]["index"]["number_of_shards"])
    raise SearchUnavailableError(not_an_answer("the settings request", body))


def _mtermvectors(client: Elasticsearch, index: str, docs: list[dict[str, Any]]) -> Any:
    return client.mtermvectors(index=index, docs=docs).body


def _field(answer: Any, field: str) -> dict[str, Any]:
    if not isinstance(answer, dict) or "error" in answer:
        raise SearchUnavailableError(not_an_answer("_mtermvectors", answer))
    found = (answer.get("term_vectors") or {}).get(field)
    return found if isinstance(found, dict) else {}
