"""A night of lexical or hybrid recall continues from last night's state, exactly (issue 47):
a kept BM25 list's bound, raised by how far the store's BM25 statistics moved, still bounds
every unchanged chunk it left out, so the kept chunks and the changed ones, scored with
tonight's statistics, above the raised bound, are the store's true top."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from connectors.chunk_record import ChunkRecord
from pipeline.run.continuation_plan import MAX_CHANGED_SHARE
from pipeline.run.lexical_change import KEPT_FILE
from pipeline.run.state_files import STATE_SUFFIX
from tests.pipeline.run import nights
from tests.pipeline.run.nights import DOCS, PER_DOC

VOCABULARY = ["apple", "banana", "cherry", "date", "elder", "fig", "grape", "honeydew",
              "kiwi", "lemon", "mango", "nectarine", "orange", "papaya", "quince", "the"]
"""Few words, one a stop word: chunks share words often, and BM25 scores tie."""


def _worded(rng: np.random.Generator, records: list[ChunkRecord]) -> list[ChunkRecord]:
    """Records with words for contents, where they had none (new ones); the others as they
    are (a rewritten one has a word more)."""
    return [r.model_copy(update={"content": " ".join(rng.choice(VOCABULARY,
                                                                int(rng.integers(2, 9))))})
            if r.content.startswith("content ") else r for r in records]


def _standing(rng: np.random.Generator, mode: str) -> list[dict]:
    words = VOCABULARY[:-1]  # a text of stop words alone has nothing to embed
    texts = [{"id": f"t{n}", "text": " ".join(rng.choice(words, int(rng.integers(1, 4)))),
              **({"filters": {"parity": 1}} if n % 6 == 5 else {})} for n in range(40)]
    # hybrid: vector queries too (their kNN lists alone), and vectors with a text
    others = ([q for q in nights.standing_queries(rng, 20, "v") if "text" not in q]
              if mode == "hybrid" else [])
    return texts + others


def _night(tmp_path: Path, name: str, config: Path, queries: Path, previous: Path
           ) -> tuple[Path, dict, Path]:
    continued, counts = nights.run(config, queries, tmp_path / name, previous)
    full, _ = nights.run(config, queries, tmp_path / f"{name}-full", tmp_path / "empty.jsonl")
    return continued, counts, full


@pytest.mark.parametrize("mode", ["lexical", "hybrid"])
@pytest.mark.parametrize("seed", [1, pytest.param(2, marks=pytest.mark.slow),
                                  pytest.param(3, marks=pytest.mark.slow)])
def test_a_continued_lexical_or_hybrid_night_equals_a_full_one_night_after_night(
        tmp_path: Path, store_section: str, mode: str, seed: int) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(f"{store_section}"
                      f"embedder:\n  dim: 8\nrag:\n  retrieve-k: 10\n  return-n: 3\n"
                      f"  recall:\n    mode: {mode}\n")
    nights.write(tmp_path / "empty.jsonl", [])
    rng = np.random.default_rng(seed)
    records = _worded(rng, nights.random_records(rng, DOCS * PER_DOC, start=0))
    nights.index(config, nights.write(tmp_path / "chunks1.jsonl", records))
    standing = _standing(rng, mode)
    queries = nights.write(tmp_path / "q.jsonl", standing)
    first, night1 = nights.run(config, queries, tmp_path / "n1", tmp_path / "empty.jsonl")
    assert night1["results"] == len(standing) and night1["dead_letters"] == 0
    assert (Path(f"{first}{STATE_SUFFIX}") / KEPT_FILE).is_file()

    each = int(MAX_CHANGED_SHARE * len(records)) // 3
    for night in ("n2", "n3"):  # the second continues from a continued night's state
        records = _worded(rng, nights.changed_records(rng, records, each))
        nights.index(config, nights.write(tmp_path / f"chunks-{night}.jsonl", records))
        continued, counts, full = _night(tmp_path, night, config, queries, first)
        assert nights.by_id(continued) == nights.by_id(full)
        assert counts["full_not_continuable"] == 0 and counts["full_continue_failed"] == 0
        assert counts["queries_continued"] + counts["full_ran_out"] == len(standing)
        assert counts["queries_continued"] > len(standing) // 2
        assert counts["lexical_lists_continued"] >= 0.5 * 40
        first = continued


def test_a_store_whose_index_records_no_statistics_answers_lexical_nights_in_full(
        tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(f"search:\n  embedded:\n    path: {tmp_path / 'store'}\n"
                      "embedder:\n  dim: 8\nrag:\n  recall:\n    mode: lexical\n")
    rng = np.random.default_rng(4)
    nights.index(config, nights.write(tmp_path / "chunks.jsonl",
                          _worded(rng, nights.random_records(rng, DOCS * PER_DOC, start=0))))
    for statistics in (tmp_path / "store").rglob("statistics.json"):
        statistics.unlink()  # as `index` built it before it recorded them
    queries = nights.write(tmp_path / "q.jsonl", _standing(rng, "lexical"))
    empty = nights.write(tmp_path / "e.jsonl", [])
    snapshot, counts = nights.run(config, queries, tmp_path / "n1", empty)
    manifest = json.loads(Path(f"{snapshot}.manifest.json").read_text())
    assert not Path(f"{snapshot}{STATE_SUFFIX}").exists()
    assert "records no BM25 statistics" in manifest["continuation"]["answered_in_full"]
    assert counts["results"] == 40


def _chunk(n: int, content: str) -> ChunkRecord:
    doc = f"doc{n}"
    return ChunkRecord(id=f"{doc}#chunk-0", vector=tuple([1.0] + [0.0] * 7), content=content,
                       metadata={"docId": doc, "chunkIndex": 0})


def test_a_word_grown_rarer_lifts_chunks_a_kept_list_left_out_above_every_kept_one(
        tmp_path: Path, store_section: str) -> None:
    # "amber" in 30 chunks outranks "birch" in 36 for the query "amber birch" (the chunks
    # are long and near in length: the words' idf decides): the kept list holds amber chunks
    # only. Rewriting 12 birch chunks without the word makes birch the rarer: every birch
    # chunk now outranks every amber chunk, whose scores did not move, and none of them was
    # kept. Only the bound raised by the statistics' move says the kept list no longer holds
    # the top.
    config = tmp_path / "config.yaml"
    config.write_text(f"{store_section}"
                      "embedder:\n  dim: 8\nrag:\n  retrieve-k: 5\n  return-n: 3\n"
                      "  recall:\n    mode: lexical\n")

    def words(length: int) -> str:
        return " ".join(f"filler{k % 5}" for k in range(100 + length))

    chunks = ([_chunk(n, f"amber {words(n)}") for n in range(30)]
              + [_chunk(n, f"birch {words(n - 30)}") for n in range(30, 66)]
              + [_chunk(n, f"other{n % 50} {words(n % 7)}") for n in range(66, 400)])
    nights.index(config, nights.write(tmp_path / "chunks1.jsonl", chunks))
    queries = nights.write(tmp_path / "q.jsonl", [{"id": "q", "text": "amber birch"}])
    empty = nights.write(tmp_path / "empty.jsonl", [])
    first, _ = nights.run(config, queries, tmp_path / "n1", empty)
    assert [e["doc_id"] for e in json.loads(first.read_text())["evidence"]] == [
        "doc0", "doc1", "doc2"]

    rewritten = [_chunk(n, f"other{n} {words(n - 30)}") for n in range(30, 42)]
    nights.index(config, nights.write(tmp_path / "chunks2.jsonl",
                                      chunks[:30] + rewritten + chunks[42:]))
    continued, counts, full = _night(tmp_path, "n2", config, queries, first)
    assert [e["doc_id"] for e in json.loads(full.read_text())["evidence"]] == [
        "doc42", "doc43", "doc44"]
    assert nights.by_id(continued) == nights.by_id(full)
    assert counts["full_ran_out"] == 1  # the raised bound stands above every kept chunk
