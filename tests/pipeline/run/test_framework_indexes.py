"""Indexes that LangChain, LlamaIndex and Haystack wrote, read through one layout setting; and
indexes this project writes in each layout, read by that framework's own retriever."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from pipeline.cli.main import main
from tests.frameworks import (
    corpus,
    embed,
    es_settings,
    haystack_store,
    langchain_store,
    llamaindex_store,
    run_layout,
)

pytestmark = [pytest.mark.live_es, pytest.mark.slow]  # each framework's own store

CAP = ["--set", "rag.retrieve-k=30", "--set", "rag.return-n=10",
       "--set", "rag.max-chunks-per-document=2"]


def _per_doc(blocks: list[dict]) -> Counter[str | None]:
    return Counter(b["doc_id"] for b in blocks)


def test_a_langchain_index_reads_with_chunk_keys_caps_and_keyword_filters(
        es_url: str, es_index: str, tmp_path: Path) -> None:
    from langchain_core.documents import Document

    store = langchain_store(es_url, es_index)
    store.add_documents(
        [Document(page_content=text, metadata={"docId": f"doc{d}", "chunkIndex": c,
                                               "source": f"doc{d}.md"})
         for d, c, text in corpus()], ids=[f"lc-{d}-{c}" for d, c, _ in corpus()])
    store.client.indices.refresh(index=es_index)
    target = corpus()[3 * 3 + 1][2]  # doc3, chunk 1

    code, results, dead = run_layout(
        tmp_path, es_url, es_index, "langchain",
        [{"id": "all", "vector": embed(target)},
         {"id": "filtered", "vector": embed(target), "filters": {"docId": "doc5"}},
         {"id": "by-source", "vector": embed(target), "filters": {"source": ["doc7.md"]}}], *CAP)

    assert (code, dead) == (0, [])
    top = results["all"][0]
    assert (top["evidence_key"], top["doc_id"], top["content"]) == ("doc3#chunk-1", "doc3", target)
    assert top["score"] == pytest.approx(1.0, abs=1e-3)
    assert all(b["evidence_key"] == f"{b['doc_id']}#chunk-{b['chunk_index']}"
               for b in results["all"])
    assert max(_per_doc(results["all"]).values()) == 2
    assert set(_per_doc(results["filtered"])) == {"doc5"}
    assert set(_per_doc(results["by-source"])) == {"doc7"}
    assert len(results["filtered"]) == 2


def test_a_llamaindex_index_reads_node_ids_source_documents_and_orphans(
        es_url: str, es_index: str, tmp_path: Path) -> None:
    from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode

    nodes = []
    for d, c, text in corpus()[:27]:
        metadata: dict[str, object] = {"source": f"doc{d}.md"}
        if d < 5:
            metadata["chunkIndex"] = c  # the user's own chunk index
        node = TextNode(id_=f"node-{d}-{c}", text=text, embedding=embed(text), metadata=metadata)
        node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=f"doc{d}")
        nodes.append(node)
    orphans = [TextNode(id_=f"orphan-{i}", text=text, embedding=embed(text))
               for i, (_, _, text) in enumerate(corpus()[27:])]
    with llamaindex_store(es_url, es_index) as store:
        store.add(nodes + orphans)
    orphan_vectors = [embed(o.text) for o in orphans]

    code, results, dead = run_layout(
        tmp_path, es_url, es_index, "llamaindex",
        [{"id": "orphans", "vectors": orphan_vectors},
         {"id": "doc2", "vector": embed(corpus()[2 * 3][2])},
         {"id": "doc6", "vector": embed(corpus()[6 * 3 + 2][2]), "filters": {"doc_id": "doc6"}}],
        "--set", "rag.retrieve-k=1", "--set", "rag.return-n=10")
    assert (code, dead) == (0, [])
    assert sorted(b["evidence_key"] for b in results["orphans"]) == [
        "vector:orphan-0", "vector:orphan-1", "vector:orphan-2"]
    assert all(b["doc_id"] is None for b in results["orphans"])
    assert [(b["evidence_key"], b["doc_id"]) for b in results["doc2"]] == [("doc2#chunk-0", "doc2")]
    assert [(b["evidence_key"], b["doc_id"]) for b in results["doc6"]] == [
        ("vector:node-6-2", "doc6")]

    code, results, _ = run_layout(tmp_path, es_url, es_index, "llamaindex",
                                  [{"id": "wide", "vector": embed(corpus()[8 * 3][2])}], *CAP)
    assert code == 0
    counts = _per_doc(results["wide"])
    assert max(n for doc, n in counts.items() if doc is not None) == 2
    assert not any("_node_content" in b["content"] for b in results["wide"])


def test_a_haystack_index_reads_metadata_from_the_top_level(
        es_url: str, es_index: str, tmp_path: Path) -> None:
    from haystack import Document

    store = haystack_store(es_url, es_index)
    store.write_documents([Document(id=f"hs-{d}-{c}", content=text, embedding=embed(text),
                                    meta={"docId": f"doc{d}", "chunkIndex": c,
                                          "source": f"doc{d}.md"})
                           for d, c, text in corpus()])
    target = corpus()[4 * 3 + 2][2]

    code, results, dead = run_layout(
        tmp_path, es_url, es_index, "haystack",
        [{"id": "all", "vector": embed(target)},
         {"id": "filtered", "vector": embed(target), "filters": {"docId": "doc1"}}], *CAP)

    assert (code, dead) == (0, [])
    assert results["all"][0]["evidence_key"] == "doc4#chunk-2"
    assert results["all"][0]["score"] == pytest.approx(1.0, abs=1e-3)
    assert max(_per_doc(results["all"]).values()) == 2
    assert set(_per_doc(results["filtered"])) == {"doc1"}


def _index_docs(tmp: Path, url: str, index: str, layout: str) -> str:
    docs = tmp / "docs"
    docs.mkdir()
    for d, _, text in corpus():
        with open(docs / f"doc{d}.md", "a") as file:
            file.write(text + ".\n\n")
    assert main(["index", "--docs", str(docs), *es_settings(url, index, layout),
                 "--set", "chunking.max-chars=50"]) == 0
    return corpus()[5 * 3 + 1][2]


def _our_top_keys(tmp: Path, url: str, index: str, layout: str, text: str) -> list[str]:
    code, results, dead = run_layout(tmp, url, index, layout, [{"id": "q", "text": text}],
                                     "--set", "rag.retrieve-k=3", "--set", "rag.return-n=3",
                                     "--set", "rag.max-chunks-per-document=3")
    assert (code, dead) == (0, [])
    return [b["evidence_key"] for b in results["q"]]


def test_langchain_reads_an_index_written_in_its_layout(
        es_url: str, es_index: str, tmp_path: Path) -> None:
    query = _index_docs(tmp_path, es_url, es_index, "langchain")
    found = langchain_store(es_url, es_index).similarity_search(query, k=3)
    assert [f"{d.metadata['docId']}#chunk-{d.metadata['chunkIndex']}" for d in found] == \
        _our_top_keys(tmp_path, es_url, es_index, "langchain", query)
    assert query in found[0].page_content


def test_langchain_reads_the_default_layout_with_two_overrides(
        es_url: str, es_index: str, tmp_path: Path) -> None:
    query = _index_docs(tmp_path, es_url, es_index, "rag-evidence")
    store = langchain_store(es_url, es_index, vector_query_field="embedding",
                            query_field="content")
    found = store.similarity_search(query, k=3)
    assert [f"{d.metadata['docId']}#chunk-{d.metadata['chunkIndex']}" for d in found] == \
        _our_top_keys(tmp_path, es_url, es_index, "rag-evidence", query)


def test_llamaindex_reads_an_index_written_in_its_layout(
        es_url: str, es_index: str, tmp_path: Path) -> None:
    from llama_index.core.vector_stores.types import VectorStoreQuery

    query = _index_docs(tmp_path, es_url, es_index, "llamaindex")
    with llamaindex_store(es_url, es_index) as store:
        result = store.query(VectorStoreQuery(query_embedding=embed(query), similarity_top_k=3))
    assert [n.node_id for n in result.nodes] == _our_top_keys(
        tmp_path, es_url, es_index, "llamaindex", query)
    top = result.nodes[0]
    assert top.ref_doc_id == top.metadata["docId"]
    assert query in top.get_content()


def test_haystack_reads_an_index_written_in_its_layout(
        es_url: str, es_index: str, tmp_path: Path) -> None:
    from haystack_integrations.components.retrievers.elasticsearch import (
        ElasticsearchEmbeddingRetriever,
    )

    query = _index_docs(tmp_path, es_url, es_index, "haystack")
    retriever = ElasticsearchEmbeddingRetriever(document_store=haystack_store(es_url, es_index),
                                                top_k=3)
    found = retriever.run(query_embedding=embed(query))["documents"]
    assert [d.id for d in found] == _our_top_keys(tmp_path, es_url, es_index, "haystack", query)
    assert found[0].meta["docId"] == found[0].id.split("#")[0]
    assert query in found[0].content


def test_a_langchain_index_read_without_its_layout_fails_at_start_naming_the_field(
        es_url: str, es_index: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from langchain_core.documents import Document

    langchain_store(es_url, es_index).add_documents(
        [Document(page_content="alpha", metadata={"docId": "d", "chunkIndex": 0})])
    code, results, _ = run_layout(
        tmp_path, es_url, es_index, "rag-evidence", [{"id": "q", "vector": embed("alpha")}],
        "--set", "search.elasticsearch.vector-field=vector")
    assert (code, results) == (2, {})
    assert (f"config search.elasticsearch.content-field='content': index {es_index!r} on "
            f"[{es_url!r}] has no such field") in capsys.readouterr().err
