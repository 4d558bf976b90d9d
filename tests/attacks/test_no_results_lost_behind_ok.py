"""A run that would lose results is refused before it starts, by flag and path."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

from pipeline.cli.main import main

VECTOR = json.dumps({"id": "q1", "vector": [1.0] + [0.0] * 7})


def _run(config: Path, queries: str, out: str, *extra: str) -> int:
    return main(["run", "--config", str(config), "--queries", queries, "--out", out, *extra])


def _queries(tmp_path: Path) -> Path:
    path = tmp_path / "q.jsonl"
    path.write_text(VECTOR + "\n")
    return path


@pytest.mark.parametrize("same", ["--dead-letter", "--queries"])
def test_an_output_over_another_file_of_the_run_is_refused(
        store_config: Path, tmp_path: Path, same: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    queries, out = _queries(tmp_path), tmp_path / "out.jsonl"
    if same == "--dead-letter":
        code = _run(store_config, str(queries), str(out), "--dead-letter", str(out))
    else:
        code = _run(store_config, str(queries), str(queries))
    assert code == 2
    assert "is the same file as" in capsys.readouterr().err
    assert queries.read_text() == VECTOR + "\n"


def test_an_output_that_is_a_folder_or_in_a_missing_folder_is_refused(
        store_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    queries = _queries(tmp_path)
    assert _run(store_config, str(queries), str(tmp_path)) == 2
    assert "is a folder" in capsys.readouterr().err
    assert _run(store_config, str(queries), str(tmp_path / "no" / "out.jsonl")) == 2
    assert "does not exist" in capsys.readouterr().err


def test_queries_from_a_pipe_are_refused_rather_than_peeked_and_lost(
        store_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "queries.fifo"
    os.mkfifo(fifo)
    assert _run(store_config, str(fifo), str(tmp_path / "out.jsonl")) == 2
    assert "not a regular file" in capsys.readouterr().err


def test_a_folder_as_queries_is_one_line_not_a_traceback(
        store_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(store_config, str(tmp_path), str(tmp_path / "out.jsonl")) == 2
    assert capsys.readouterr().err.strip().endswith("is a folder, not a file")


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32"])
def test_a_file_that_is_not_utf8_is_one_clear_failure(
        store_config: Path, tmp_path: Path, encoding: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    queries = tmp_path / "q.jsonl"
    queries.write_text(VECTOR + "\n" + VECTOR.replace("q1", "q2") + "\n", encoding=encoding)
    assert _run(store_config, str(queries), str(tmp_path / "out.jsonl")) == 2
    assert "is not UTF-8 text" in capsys.readouterr().err


def test_chunks_and_failures_must_be_different_files(
        store_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chunks = tmp_path / "chunks.jsonl"
    chunks.write_text("{}\n")
    assert main(["index", "--config", str(store_config), "--chunks", str(chunks),
                 "--failures", str(chunks)]) == 2
    assert "is the same file as --chunks" in capsys.readouterr().err
    assert chunks.read_text() == "{}\n"


def test_gzip_input_is_accepted(store_config: Path, tmp_path: Path) -> None:
    queries = tmp_path / "q.jsonl.gz"
    queries.write_bytes(gzip.compress((VECTOR + "\n").encode()))
    assert _run(store_config, str(queries), str(tmp_path / "out.jsonl")) == 0


def _lines(count: int) -> bytes:
    return "".join(json.dumps({"id": f"q{i}", "vector": [1.0] + [0.0] * 7}) + "\n"
                   for i in range(count)).encode()


def test_a_truncated_gzip_answers_what_it_holds_and_fails_the_run_naming_the_file(
        store_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    whole = gzip.compress(_lines(400))
    queries = tmp_path / "q.jsonl.gz"
    queries.write_bytes(whole[: len(whole) // 2])
    out, dead = tmp_path / "out.jsonl", tmp_path / "dead.jsonl"
    code = _run(store_config, str(queries), str(out), "--dead-letter", str(dead))
    answered = out.read_text().splitlines()
    (letter,) = [json.loads(x) for x in dead.read_text().splitlines()]
    assert 0 < len(answered) < 400
    assert f"{queries} is truncated or corrupt after line {len(answered)}" in letter["error"]
    assert code == 1 and "MISMATCH" in capsys.readouterr().out


def test_a_corrupt_parquet_row_group_fails_the_run_naming_it(
        store_config: Path, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    queries = tmp_path / "q.parquet"
    table = pa.table({"id": [f"q{i}" for i in range(20)],
                      "vector": [[1.0] + [0.0] * 7 for _ in range(20)]})
    pq.write_table(table, queries, row_group_size=10)
    data = bytearray(queries.read_bytes())
    data[200:260] = b"\xff" * 60  # inside the first row group's pages
    queries.write_bytes(bytes(data))
    out, dead = tmp_path / "out.parquet", tmp_path / "dead.jsonl"
    code = _run(store_config, str(queries), str(out), "--dead-letter", str(dead))
    letters = [json.loads(x) for x in dead.read_text().splitlines()]
    assert code == 1
    assert any("row group 0 (rows from 1) cannot be read" in d["error"] for d in letters)


def test_a_line_past_the_limit_is_skipped_unread_and_is_its_own_dead_letter(
        store_config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.io import line_blocks

    monkeypatch.setattr(line_blocks, "MAX_LINE_BYTES", 1000)
    queries = tmp_path / "q.jsonl"
    queries.write_bytes(_lines(1) + b'{"id": "long", "text": "' + b"x" * 5000 + b'"}\n'
                        + _lines(2)[len(_lines(1)):])
    out, dead = tmp_path / "out.jsonl", tmp_path / "dead.jsonl"
    code = _run(store_config, str(queries), str(out), "--dead-letter", str(dead))
    (letter,) = [json.loads(x) for x in dead.read_text().splitlines()]
    assert (letter["line_number"], code) == (2, 0)
    assert "more than" in letter["error"] and len(out.read_text().splitlines()) == 2
