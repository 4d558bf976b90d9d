"""`run --previous PREV` continued from PREV's state (issue 32): after random changes to the
store and to the standing queries, the continued run's snapshot equals a full run's, query for
query, while it searches only what changed and embeds no unchanged text."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.cli.main import main
from pipeline.run.continuation_plan import MAX_CHANGED_SHARE
from pipeline.run.state_files import QUERIES_FILE, STATE_SUFFIX
from tests.pipeline.run import nights
from tests.pipeline.run.nights import DIM, DOCS, PER_DOC


@pytest.fixture
def night(tmp_path: Path) -> tuple[Path, Path]:
    """A config of a store in `tmp_path` and an empty PREV (the first night)."""
    config = tmp_path / "config.yaml"
    config.write_text(f"search:\n  embedded:\n    path: {tmp_path / 'store'}\n"
                      f"embedder:\n  dim: {DIM}\nrag:\n  retrieve-k: 10\n  return-n: 3\n")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    return config, empty


@pytest.mark.parametrize("seed", [1, pytest.param(2, marks=pytest.mark.slow),
                                  pytest.param(3, marks=pytest.mark.slow)])
def test_a_continued_run_equals_a_full_run_after_random_changes(
        night: tuple[Path, Path], tmp_path: Path, seed: int) -> None:
    config, empty = night
    rng = np.random.default_rng(seed)
    records = nights.random_records(rng, DOCS * PER_DOC, start=0)
    nights.index(config, nights.write(tmp_path / "chunks1.jsonl", records))
    standing = nights.standing_queries(rng, 60, "q")
    first, night1 = nights.run(config, nights.write(tmp_path / "q1.jsonl", standing),
                               tmp_path / "n1", empty)
    assert Path(f"{first}{STATE_SUFFIX}").is_dir()
    assert night1["full_new_query"] == night1["evidence_new"] == night1["results"] == 60

    each = int(MAX_CHANGED_SHARE * len(records)) // 3
    nights.index(config, nights.write(tmp_path / "chunks2.jsonl",
                                      nights.changed_records(rng, records, each)))
    tonight = standing[5:] + nights.standing_queries(rng, 5, "new")
    tonight[0] = {**tonight[0], "filters": {"parity": 1}}
    queries = nights.write(tmp_path / "q2.jsonl", tonight)
    continued, counts = nights.run(config, queries, tmp_path / "n2", first)
    full, _ = nights.run(config, queries, tmp_path / "full", empty)

    assert nights.by_id(continued) == nights.by_id(full)
    assert counts["previous_gone"] == 5 and counts["evidence_new"] == 5
    assert counts["evidence_unchanged"] + counts["evidence_changed"] == 55
    assert counts["results"] == 5 + counts["evidence_changed"]
    gone = (tmp_path / "n2" / "out.jsonl.gone.jsonl").read_text().splitlines()
    assert sorted(json.loads(x)["query_id"] for x in gone) == [f"q{n}" for n in range(5)]
    assert counts["full_new_query"] == 5 and counts["full_query_changed"] == 1
    assert counts["queries_continued"] + counts["full_ran_out"] == 54
    assert counts["queries_continued"] > 40 and counts["continued_unchanged"] > 0
    assert counts["delta_chunks"] == 3 * each
    texts = sum(1 for q in tonight if "text" in q)
    assert counts["texts_embedded"] == 1  # the one new text query, of these `texts`
    assert texts > 1

    shutil.rmtree(f"{first}{STATE_SUFFIX}")
    _, compared = nights.run(config, queries, tmp_path / "compared", first)
    assert compared["full_not_continuable"] == 60 and compared["queries_continued"] == 0
    assert nights.by_id(tmp_path / "compared" / "out.jsonl") == nights.by_id(
        tmp_path / "n2" / "out.jsonl")
    manifest = json.loads((tmp_path / "compared" / "snapshot.jsonl.manifest.json").read_text())
    assert "is missing" in manifest["continuation"]["answered_in_full"]


@pytest.mark.slow
@pytest.mark.parametrize("suffix", ["jsonl", "parquet"])
def test_a_night_after_a_continued_one_continues_from_its_state(
        night: tuple[Path, Path], tmp_path: Path, suffix: str) -> None:
    config, empty = night
    rng = np.random.default_rng(9)
    records = nights.random_records(rng, DOCS * PER_DOC, start=0)
    nights.index(config, nights.write(tmp_path / "chunks1.jsonl", records))
    queries = nights.write(tmp_path / "q.jsonl", nights.standing_queries(rng, 40, "q"))
    previous, _ = nights.run(config, queries, tmp_path / "n1", empty, suffix)
    for night_number in (2, 3, 4):
        records = nights.changed_records(rng, records, 4)
        nights.index(config, nights.write(tmp_path / f"chunks{night_number}.jsonl", records))
        previous, counts = nights.run(config, queries, tmp_path / f"n{night_number}", previous,
                                suffix)
        full, _ = nights.run(config, queries, tmp_path / f"full{night_number}", empty)
        assert nights.by_id(previous) == nights.by_id(full)
        assert counts["queries_continued"] > 0 and counts["texts_embedded"] == 0


def test_a_continued_run_without_a_snapshot_writes_what_one_with_it_writes(
        night: tuple[Path, Path], tmp_path: Path) -> None:
    """Without `--snapshot` the run keeps no state, and its query ids go through memory
    instead of part files in the state's folder: the same queries continue, with the same
    output."""
    config, empty = night
    rng = np.random.default_rng(5)
    records = nights.random_records(rng, DOCS * PER_DOC, start=0)
    nights.index(config, nights.write(tmp_path / "chunks1.jsonl", records))
    queries = nights.write(tmp_path / "q.jsonl", nights.standing_queries(rng, 40, "q"))
    previous, _ = nights.run(config, queries, tmp_path / "n1", empty)
    nights.index(config, nights.write(tmp_path / "chunks2.jsonl",
                                      nights.changed_records(rng, records, 4)))
    _, kept = nights.run(config, queries, tmp_path / "kept", previous)
    alone = tmp_path / "alone"
    alone.mkdir()
    assert main(["run", "--config", str(config), "--queries", str(queries), "--out",
                 str(alone / "out.jsonl"), "--previous", str(previous), "--summary",
                 str(alone / "summary.json")]) == 0
    counts = json.loads((alone / "summary.json").read_text())["counts"]
    assert nights.by_id(alone / "out.jsonl") == nights.by_id(tmp_path / "kept" / "out.jsonl")
    assert counts["queries_continued"] == kept["queries_continued"] > 0
    assert sorted(p.name for p in alone.iterdir()) == sorted(
        ["out.jsonl", "out.jsonl.dead-letter.jsonl", "out.jsonl.gone.jsonl",
         "out.jsonl.manifest.json", "summary.json"])
    # the run with --snapshot left no part of its ids (nor of anything) in its state folder
    state = Path(f"{tmp_path / 'kept' / 'snapshot.jsonl'}{STATE_SUFFIX}")
    assert sorted(p.name for p in state.iterdir()) == ["chunks.arrow", QUERIES_FILE,
                                                       "state.json"]


def test_a_query_that_lost_more_than_its_margin_is_recalled_and_still_exact(
        night: tuple[Path, Path], tmp_path: Path) -> None:
    config, empty = night
    rng = np.random.default_rng(5)
    records = nights.random_records(rng, DOCS * PER_DOC, start=0)
    nights.index(config, nights.write(tmp_path / "chunks1.jsonl", records))
    target = np.asarray(records[0].vector)
    queries = nights.write(tmp_path / "q.jsonl", [{"id": "near", "vector": target.tolist()},
                                            {"id": "far", "vector": (-target).tolist()}])
    previous, _ = nights.run(config, queries, tmp_path / "n1", empty)
    nearest = np.argsort(-np.asarray([r.vector for r in records]) @ target)[:14]
    left = [r for n, r in enumerate(records) if n not in set(nearest.tolist())]
    nights.index(config, nights.write(tmp_path / "chunks2.jsonl", left))
    continued, counts = nights.run(config, queries, tmp_path / "n2", previous)
    full, _ = nights.run(config, queries, tmp_path / "full", empty)
    assert nights.by_id(continued) == nights.by_id(full)
    assert counts["full_ran_out"] == 1 and counts["queries_continued"] == 1


def _two_nights(config: Path, empty: Path, tmp_path: Path, *changes: str
                ) -> tuple[Path, dict, dict]:
    rng = np.random.default_rng(3)
    nights.index(config, nights.write(tmp_path / "chunks.jsonl",
                                      nights.random_records(rng, DOCS * PER_DOC, start=0)))
    queries = nights.write(tmp_path / "q.jsonl", nights.standing_queries(rng, 20, "q"))
    first, _ = nights.run(config, queries, tmp_path / "n1", empty)
    for change in changes:
        config.write_text(config.read_text() + change)
    second, counts = nights.run(config, queries, tmp_path / "n2", first)
    manifest = json.loads(Path(f"{second}.manifest.json").read_text())
    return second, counts, manifest


def test_a_change_of_settings_answers_every_query_in_full_and_says_why(
        night: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config, empty = night
    _, counts, manifest = _two_nights(config, empty, tmp_path, "projection:\n  max-items: 2\n")
    assert counts["full_not_continuable"] == 20 and counts["queries_continued"] == 0
    assert "settings differ" in manifest["continuation"]["answered_in_full"]
    said = capsys.readouterr().out  # on the console too, not only in the manifest
    assert said.count("answered in full: the settings differ") == 1
    assert manifest["state"]["folder"].endswith(STATE_SUFFIX)


def test_a_state_changed_after_its_run_is_not_trusted(night: tuple[Path, Path],
                                                      tmp_path: Path) -> None:
    config, empty = night
    rng = np.random.default_rng(4)
    nights.index(config, nights.write(tmp_path / "chunks.jsonl",
                                      nights.random_records(rng, DOCS * PER_DOC, start=0)))
    queries = nights.write(tmp_path / "q.jsonl", nights.standing_queries(rng, 10, "q"))
    first, _ = nights.run(config, queries, tmp_path / "n1", empty)
    state = Path(f"{first}{STATE_SUFFIX}") / QUERIES_FILE
    state.write_bytes(state.read_bytes()[:-10] + b"0123456789")
    second, counts = nights.run(config, queries, tmp_path / "n2", first)
    manifest = json.loads(Path(f"{second}.manifest.json").read_text())
    assert counts["full_not_continuable"] == 10
    assert "does not match its manifest" in manifest["continuation"]["answered_in_full"]


def test_a_run_told_to_keep_no_state_keeps_none_and_says_why(night: tuple[Path, Path],
                                                             tmp_path: Path) -> None:
    config, empty = night
    config.write_text(config.read_text() + "job:\n  keep-state: false\n")
    second, counts, manifest = _two_nights(config, empty, tmp_path)
    assert not Path(f"{second}{STATE_SUFFIX}").exists() and "state" not in manifest
    assert counts["full_not_continuable"] == 20 and counts["queries_continued"] == 0
    assert "job.keep-state is false" in manifest["continuation"]["answered_in_full"]


def _lines_by_id(path: Path) -> dict[str, bytes]:
    return {json.loads(line)["query_id"]: line for line in path.read_bytes().splitlines()}


def _edited(rng: np.random.Generator, queries: list[dict]) -> list[dict]:
    """Tonight's standing queries: some gone, some new, some rewritten (a new text or filter,
    or the same query written otherwise), one id twice."""
    tonight = []
    for query in queries:
        roll = rng.random()
        if roll < 0.1:
            continue
        if roll < 0.15:
            query = {**query, "filters": {"parity": int(rng.integers(0, 2))}}
        elif roll < 0.2:
            query = dict(reversed(list(query.items())))  # same query, another line
        elif roll < 0.25 and "text" in query:
            query = {**query, "text": query["text"] + " more"}
        tonight.append(query)
    tonight += nights.standing_queries(rng, 4, "new")
    tonight.append({**tonight[0], "id": tonight[1]["id"]})
    return tonight


@pytest.mark.slow
@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), each=st.integers(0, 6))
def test_continued_and_full_snapshots_hold_the_same_bytes_after_any_change(
        seed: int, each: int) -> None:
    """A property over random stores, changes and edits of the standing queries: every line
    of a continued night's snapshot is byte for byte the full run's line of its query."""
    with tempfile.TemporaryDirectory() as folder:
        tmp_path = Path(folder)
        config = tmp_path / "config.yaml"
        config.write_text(f"search:\n  embedded:\n    path: {tmp_path / 'store'}\n"
                          f"embedder:\n  dim: {DIM}\nrag:\n  retrieve-k: 10\n  return-n: 3\n")
        empty = tmp_path / "empty.jsonl"
        empty.write_text("")
        rng = np.random.default_rng(seed)
        records = nights.random_records(rng, DOCS * PER_DOC, start=0)
        nights.index(config, nights.write(tmp_path / "chunks1.jsonl", records))
        standing = nights.standing_queries(rng, 50, "q")
        first, _ = nights.run(config, nights.write(tmp_path / "q1.jsonl", standing),
                              tmp_path / "n1", empty)
        nights.index(config, nights.write(tmp_path / "chunks2.jsonl",
                                      nights.changed_records(rng, records, each)))
        queries = nights.write(tmp_path / "q2.jsonl", _edited(rng, standing))
        continued, counts = nights.run(config, queries, tmp_path / "n2", first)
        full, _ = nights.run(config, queries, tmp_path / "full", empty)
        assert _lines_by_id(continued) == _lines_by_id(full)
        assert counts["queries_continued"] > 0


def test_parquet_queries_continue_and_a_changed_row_is_read_again(
        night: tuple[Path, Path], tmp_path: Path) -> None:
    """Rows are told unchanged by a digest of their columns: an edited row is parsed again,
    the others are not, and the snapshot equals a full run's."""
    config, empty = night
    rng = np.random.default_rng(11)
    records = nights.random_records(rng, DOCS * PER_DOC, start=0)
    nights.index(config, nights.write(tmp_path / "chunks1.jsonl", records))
    rows = [q for q in nights.standing_queries(rng, 30, "q") if "vector" in q]
    first, _ = nights.run(config, _parquet(tmp_path / "q1.parquet", rows), tmp_path / "n1", empty)
    nights.index(config, nights.write(tmp_path / "chunks2.jsonl",
                                      nights.changed_records(rng, records, 2)))
    rows[0] = {**rows[0], "vector": [-x for x in rows[0]["vector"]]}
    queries = _parquet(tmp_path / "q2.parquet", rows)
    continued, counts = nights.run(config, queries, tmp_path / "n2", first)
    full, _ = nights.run(config, queries, tmp_path / "full", empty)
    assert _lines_by_id(continued) == _lines_by_id(full)
    assert counts["full_query_changed"] == 1 and counts["queries"] == len(rows)
    assert counts["queries_continued"] + counts["full_ran_out"] == len(rows) - 1


def _parquet(path: Path, rows: list[dict]) -> Path:
    pq.write_table(pa.Table.from_pylist([{"filters": None, **r} for r in rows]), path)
    return path


def test_chunks_of_the_same_score_keep_the_full_runs_order_when_the_store_reorders(
        night: tuple[Path, Path], tmp_path: Path) -> None:
    """Chunks with equal vectors score the same; the store orders them by row, and a new
    version written from the chunks in another order may change which comes first."""
    config, empty = night
    config.write_text(config.read_text().replace("retrieve-k: 10\n  return-n: 3",
                                                 "retrieve-k: 1\n  return-n: 1"))
    rng = np.random.default_rng(13)
    records = nights.random_records(rng, DOCS * PER_DOC, start=0)
    twins = [r.model_copy(update={"id": f"twin{n}#chunk-0", "metadata": {
        **r.metadata, "docId": f"twin{n}", "chunkIndex": 0}}) for n, r in enumerate(records[:40])]
    nights.index(config, nights.write(tmp_path / "chunks1.jsonl", records + twins))
    queries = nights.write(tmp_path / "q.jsonl", [{"id": f"q{n}", "vector": list(r.vector)}
                                            for n, r in enumerate(records[:20])])
    first, _ = nights.run(config, queries, tmp_path / "n1", empty)
    reordered = nights.write(tmp_path / "chunks2.jsonl", twins + records)
    assert main(["index", "--config", str(config), "--chunks", str(reordered),
                 "--rebuild"]) == 0
    continued, counts = nights.run(config, queries, tmp_path / "n2", first)
    full, _ = nights.run(config, queries, tmp_path / "full", empty)
    assert _lines_by_id(continued) == _lines_by_id(full)
    assert counts["queries_continued"] == 20
