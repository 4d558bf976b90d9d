"""The configuration reference (`docs/configuration.md`), generated from the settings model:
every key with its default and bounds as the model declares them, and what it means.

    python -m pipeline.config.reference > docs/configuration.md

A test compares the page with what this module generates, so a setting added to the model
without a meaning here, or a page left behind, fails."""

from __future__ import annotations

import dataclasses
import json
import sys
import types
import typing
from collections.abc import Iterator
from typing import Any, NamedTuple

from pydantic import BaseModel

from core.params import Bound, kebab
from pipeline.config.settings import FOLDED, RENAMED_KEYS, Settings

MEANINGS = {
    "rag.retrieve-k": "recall width: candidates asked of the port per sub-query",
    "rag.return-n": "evidence blocks per query after post-processing",
    "rag.top-k": "legacy: fills `retrieve-k` and/or `return-n` when absent (logged once)",
    "rag.max-chunks-per-document": "per-document cap (PerDocCap)",
    "rag.min-score": "a floor on the block score before TopN (ScoreFloor; off when unset)",
    "rag.max-sub-queries": "vectors one query may search with; more is a dead letter",
    "rag.dedup-key": "`source` reproduces the pre-spec bug, for eval baselines only",
    "rag.mmr.lambda": "Mmr (on when `rag.mmr` is given): 1 ranks by relevance alone, 0 by "
                      "diversity alone",
    "rag.mmr.top": "candidates Mmr keeps (unset: `rag.return-n`)",
    "rag.rerank.kind": "Rerank (on when `rag.rerank` is given): the model kind",
    "rag.rerank.model": "the folder of a sentence-transformers cross-encoder (no download; "
                        "needs the torch extra)",
    "rag.rerank.top": "the best-ranked candidates Rerank scores and keeps",
    "rag.rerank.batch-size": "query-passage pairs the model scores at once",
    "rag.recall.mode": "`dense` (kNN), `lexical` (BM25) or `hybrid` (both, fused by RRF)",
    "rag.recall.rrf-k": "RRF constant: score = sum of weight / (rrf-k + rank)",
    "rag.recall.weights": "per retriever family, e.g. `{knn: 1.0, bm25: 0.5}`; 1.0 if unnamed",
    "search.backend": "which backend serves recall and `index`",
    "search.batch-size": "queries per port call (Elasticsearch: sent in `_msearch` requests "
                         "of at most `max-searches-per-request`)",
    "search.write-batch-size": "chunks per write of `index`, on every backend (a `_bulk` "
                               "request on Elasticsearch)",
    "search.embedded.path": "the embedded store's folder; a relative path is taken from the "
                            "working directory, not from the config file's folder",
    "search.embedded.index": "`flat` (exact) or `hnsw` (approximate, for big stores): built "
                             "by `index`, expected by `run`",
    "search.embedded.hnsw.m": "HNSW links per node (`index` time)",
    "search.embedded.hnsw.ef-construction": "HNSW build candidate list (`index` time)",
    "search.embedded.hnsw.ef-search": "HNSW search candidate list (`run` time): higher, better "
                                      "recall, slower; `auto`: calibrated on the run's queries",
    "search.embedded.hnsw.audit-rate": "share of a run's queries also searched exactly, to "
                                       "measure HNSW's recall on them (0: none)",
    "search.embedded.hnsw.audit-floor": "audited recall below which a run warns (`auto`: "
                                        "raises ef-search)",
    "search.embedded.stemmer": "the language lexical recall stems words in (`none`: no "
                               "stemming): built into the store by `index`, which builds the "
                               "lexical index again when it changes; `run` reads it from the store",
    "search.elasticsearch.hosts": "cluster URLs (no credentials in them)",
    "search.elasticsearch.index": "the index of chunks",
    "search.elasticsearch.layout": "who wrote the index; fills in the four field keys below",
    "search.elasticsearch.vector-field": "the `dense_vector` field",
    "search.elasticsearch.content-field": "the chunk text field",
    "search.elasticsearch.metadata-field": "the metadata object (null: top-level `_source`)",
    "search.elasticsearch.filter-fields": "the metadata fields a query may filter on",
    "search.elasticsearch.num-candidates": "kNN `num_candidates` (unset: max(10 x k, 100))",
    "search.elasticsearch.similarity": "an optional kNN similarity floor",
    "search.elasticsearch.request-timeout": "seconds per request",
    "search.elasticsearch.verify-certs": "check the server's TLS certificate",
    "search.elasticsearch.ca-certs": "the CA bundle that signed the server's certificate",
    "search.elasticsearch.api-key-env": "the environment variable holding an API key",
    "search.elasticsearch.username-env": "the environment variable holding a user name",
    "search.elasticsearch.password-env": "the environment variable holding a password",
    "search.elasticsearch.credentials-file": "a KEY=VALUE file read instead of the environment",
    "search.elasticsearch.max-attempts": "attempts per request, the first included",
    "search.elasticsearch.initial-backoff": "seconds before the first retry (full jitter)",
    "search.elasticsearch.max-backoff": "ceiling of one backoff, in seconds",
    "search.elasticsearch.index-options": "the vector field's `index_options` when `index` "
                                          "creates the index",
    "search.elasticsearch.stemmer": "the content field's language analyzer when `index` creates "
                                    "the index (`none`: `standard`); an existing index keeps "
                                    "its own, with a warning",
    "search.elasticsearch.max-searches-per-request": "sub-searches per `_msearch`; a timed-out "
                                                     "request is split",
    "projection.max-items": "projected items per query",
    "projection.max-chars": "total projected characters per query",
    "projection.max-chars-per-item": "characters per projected item",
    "embedder.kind": "`hashing` (dependency-free, matches words), `sentence-transformers`, or "
                     "`auto`: the model (default all-MiniLM-L6-v2) where it can run, else "
                     "hashing with a warning",
    "embedder.model": "model folder or cached model name (sentence-transformers)",
    "embedder.backend": "`onnx` (ONNX Runtime, no PyTorch; the semantic extra), `torch` "
                        "(sentence-transformers on PyTorch; the torch extra), or `auto`: onnx "
                        "where the model has ONNX weights, else torch where it is installed",
    "embedder.dim": "hashing: the dimension (unset: 384); a model's: checked against it",
    "embedder.batch-size": "texts per forward pass, queries and chunks alike",
    "embedder.query-prefix": "prepended to query texts (e5: `\"query: \"`)",
    "embedder.document-prefix": "prepended to chunk texts (e5: `\"passage: \"`)",
    "embedder.normalize": "L2-normalise the model's vectors",
    "chunking.max-chars": "chunk size for `index --docs`",
    "chunking.overlap": "characters consecutive chunks share, below `max-chars`",
    "job.max-wall-time": "a job still running after this long (seconds, or `90m`, `2h`) is "
                         "cancelled, commits nothing and exits 3 (`run --max-wall-time`); off "
                         "when unset",
    "job.keep-state": "whether a run with `--snapshot` keeps its state for the next night to "
                      "continue from (`SNAPSHOT.state/`, see [Scheduled jobs](scheduled-jobs.md"
                      "#continued-runs)); `false`: the run keeps none and continues from none "
                      "(every query is answered in full, and the manifest says why)",
}
"""What each key means: the one thing about a setting the model does not say."""

HEADER = """\
# Configuration

<!-- generated by `python -m pipeline.config.reference > docs/configuration.md`; a test checks
     that this page is what the settings model generates -->

YAML, kebab-case keys; `configs/local.yaml` is the embedded default and
`configs/elasticsearch.yaml` lists the Elasticsearch keys. Precedence, lowest first:
**defaults < YAML file < environment < `--set`**. Environment variables are
`RAG_EVIDENCE__SECTION__KEY` with `_` for `-` (`RAG_EVIDENCE__RAG__RETRIEVE_K=40`). Values from
the environment and `--set` are read as YAML scalars. Every invalid value is reported at once,
before anything runs, each as `key=value (from SOURCE): reason`, SOURCE being the file, the
environment variable's own name, or `--set` (`rag.return-n=0 (from --set): must be at least 1`);
an unknown key is named with the nearest valid key
(`rag.retreive-k (from file c.yaml): unknown key; did you mean 'rag.retrieve-k'?`). `true` is
never a number, a key cannot be set under a value (`rag.retrieve-k.x`), and a `retrieve-k` below
`return-n` is a warning. Credentials never go in a config: see
[Elasticsearch](elasticsearch.md).

| key | default | bounds | meaning |
| --- | --- | --- | --- |
"""


class Row(NamedTuple):
    key: str
    default: str
    bounds: str
    meaning: str


def rows() -> list[Row]:
    """Every setting, in the model's order."""
    return [Row(key, default, bounds, MEANINGS.get(key, "")) for key, default, bounds
            in _fields(Settings, ())]


def page() -> str:
    """The configuration page as `docs/configuration.md` holds it."""
    lines = [f"| `{r.key}` | {r.default} | {r.bounds} | {r.meaning} |" for r in rows()]
    renamed = [f"`search.{'.'.join(old)}` is read as `search.{new}`, with a warning"
               for old, new in RENAMED_KEYS.items()]
    return HEADER + "\n".join(lines) + "\n\nRenamed keys: " + "; ".join(renamed) + ".\n"


def _fields(section: type, path: tuple[str, ...]) -> Iterator[tuple[str, str, str]]:
    for name, annotation, default in _declared(section):
        here = (*path, kebab(name))
        optional = _optional_section(annotation) if default is None else None
        if _is_section(annotation) or optional is not None:
            yield from _fields(optional or annotation, FOLDED.get(here, here))
            continue
        key, bound = ".".join(here), _bound(annotation)
        if bound is not None and bound.key != key:
            continue  # set from the setting its bound names (bulk-chunk-size: write-batch-size)
        yield key, _shown(default), _bounds(annotation, bound)


def _declared(section: type) -> Iterator[tuple[str, Any, Any]]:
    hints = typing.get_type_hints(section, include_extras=True)
    if isinstance(section, type) and issubclass(section, BaseModel):
        for name, info in section.model_fields.items():
            default = (info.get_default(call_default_factory=True)
                       if not info.is_required() else REQUIRED)
            yield info.alias or name, hints[name], default
        return
    if not dataclasses.is_dataclass(section):
        raise TypeError(f"{section!r} is neither a settings model nor a dataclass")
    for field in dataclasses.fields(section):
        default = (field.default_factory() if field.default_factory is not dataclasses.MISSING
                   else field.default)
        yield field.name, hints[field.name], default


def _optional_section(annotation: Any) -> type | None:
    """The section of an optional section (`rag.mmr`: a step that is on when it is given)."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        sections = [arg for arg in typing.get_args(annotation) if _is_section(arg)]
        return sections[0] if len(sections) == 1 else None
    return None


def _is_section(annotation: Any) -> bool:
    return isinstance(annotation, type) and (
        issubclass(annotation, BaseModel) or dataclasses.is_dataclass(annotation))


def _bound(annotation: Any) -> Bound | None:
    for part in (*getattr(annotation, "__metadata__", ()), *typing.get_args(annotation)):
        if isinstance(part, Bound):
            return part
        found = None if isinstance(part, str | int | float) else _bound(part)
        if found is not None:
            return found
    return None


def _bounds(annotation: Any, bound: Bound | None) -> str:
    choices = _choices(annotation)
    if choices:
        return " \\| ".join(f"`{c}`" for c in choices) + (
            f"; or {_range(bound)}" if bound is not None else "")
    return _range(bound) if bound is not None else ""


def _range(bound: Bound) -> str:
    low = f"≥ {_number(bound.ge)}" if bound.ge is not None else (
        f"> {_number(bound.gt)}" if bound.gt is not None else "")
    high = f"≤ {_number(bound.le)}" if bound.le is not None else ""
    length = "not empty" if bound.min_length else ""
    return ", ".join(part for part in (low, high, length) if part)


def _choices(annotation: Any) -> list[str]:
    if typing.get_origin(annotation) is typing.Literal:
        return [str(choice) for choice in typing.get_args(annotation)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [c for arg in typing.get_args(annotation) for c in _choices(arg)]
    return []


def _number(value: float) -> str:
    return f"{value:,}".replace(",", " ") if isinstance(value, int) else f"{value:g}"


REQUIRED = object()
"""The default of a key that has none (the section needs it when it is given)."""


def _shown(default: Any) -> str:
    if default is REQUIRED:
        return "required"
    if default is None:
        return "unset"
    if isinstance(default, tuple):
        default = list(default)
    return f"`{json.dumps(default, ensure_ascii=False)}`"


if __name__ == "__main__":
    sys.stdout.write(page())
