"""Each framework's own Elasticsearch store, writing and reading over HTTP, with one
deterministic embedding (the hashing embedder) shared with the pipeline."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from connectors.embedders.hashing import HashingEmbedder
from pipeline.cli.main import main

DIM = 16
DOCS = 10
CHUNKS_PER_DOC = 3
EMBEDDER = HashingEmbedder(DIM)


def embed(text: str) -> list[float]:
    return [float(x) for x in EMBEDDER.embed([text])[0]]


def chunk_text(doc: int, chunk: int) -> str:
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
             "india", "juliet", "kilo", "lima"]
    return f"{words[doc % len(words)]} {words[(doc + chunk + 3) % len(words)]} part{chunk} d{doc}"


def corpus() -> list[tuple[int, int, str]]:
    """(doc, chunk, text) for 10 documents of 3 chunks: 30 chunks."""
    return [(d, c, chunk_text(d, c)) for d in range(DOCS) for c in range(CHUNKS_PER_DOC)]


def run_layout(tmp: Path, url: str, index: str, layout: str, queries: list[dict[str, Any]],
               *settings: str) -> tuple[int, dict[str, list[dict[str, Any]]], list[dict]]:
    """`rag-evidence run` over `index` read through `layout`: exit code, evidence per query
    id, dead letters."""
    path, out, dead = tmp / "queries.jsonl", tmp / "out.jsonl", tmp / "dead.jsonl"
    path.write_text("".join(json.dumps(q) + "\n" for q in queries))
    code = main(["run", "--queries", str(path), "--out", str(out), "--dead-letter", str(dead),
                 *es_settings(url, index, layout), *settings])
    results = {r["query_id"]: r["evidence"] for r in read_jsonl(out)}
    return code, results, read_jsonl(dead)


def es_settings(url: str, index: str, layout: str) -> list[str]:
    return ["--set", "search.backend=elasticsearch",
            "--set", f"search.elasticsearch.hosts=[{url}]",
            "--set", f"search.elasticsearch.index={index}",
            "--set", f"search.elasticsearch.layout={layout}",
            "--set", "search.elasticsearch.index-options={type: flat}",
            "--set", f"embedder.dim={DIM}"]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def langchain_store(url: str, index: str, **options: Any) -> Any:
    from langchain_core.embeddings import Embeddings
    from langchain_elasticsearch import ElasticsearchStore

    class Hashing(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [embed(t) for t in texts]

        def embed_query(self, text: str) -> list[float]:
            return embed(text)

    return ElasticsearchStore(index_name=index, embedding=Hashing(), es_url=url, **options)


@contextlib.contextmanager
def llamaindex_store(url: str, index: str) -> Iterator[Any]:
    """Closed after use: its asyncio client, left to the garbage collector, logs errors."""
    from llama_index.vector_stores.elasticsearch import ElasticsearchStore

    store = ElasticsearchStore(index_name=index, es_url=url)
    try:
        yield store
    finally:
        store.close()


def haystack_store(url: str, index: str) -> Any:
    from haystack_integrations.document_stores.elasticsearch import (
        ElasticsearchDocumentStore,
    )

    return ElasticsearchDocumentStore(hosts=url, index=index)
