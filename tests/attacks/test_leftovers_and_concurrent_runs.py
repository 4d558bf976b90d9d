"""What a killed job leaves is removed by the next one of
the same path, and a second job into files another live job holds is refused, naming it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from connectors.embedded.writer import write_store
from connectors.ownership import BusyError, held, lock_of
from pipeline.cli.main import main
from tests.builders import chunk_records, unit_vectors

VECTOR = json.dumps({"id": "q1", "vector": [1.0] + [0.0] * 7})


def _dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    return int(done.stdout)


def _leftover(folder: Path, name: str, pid: int) -> Path:
    path = folder / f"{name}{socket.gethostname()}-{pid}-0123abcd"
    path.mkdir()
    (path / "part-x").write_text("stale data, never to be read\n")
    return path


def test_a_run_removes_the_part_folders_of_killed_runs_of_its_output_and_keeps_live_ones(
        store_config: Path, tmp_path: Path) -> None:
    queries, out = tmp_path / "q.jsonl", tmp_path / "out.jsonl"
    queries.write_text(VECTOR + "\n")
    dead = _leftover(tmp_path, "out.jsonl.parts-", _dead_pid())
    live = _leftover(tmp_path, "out.jsonl.parts-", os.getpid())
    assert main(["run", "--config", str(store_config), "--queries", str(queries),
                 "--out", str(out)]) == 0
    assert not dead.exists() and live.exists()
    assert [json.loads(x)["query_id"] for x in out.read_text().splitlines()] == ["q1"]


def test_an_index_removes_the_staging_folders_of_killed_indexes(tmp_path: Path) -> None:
    dead = _leftover(tmp_path, ".store.staging-", _dead_pid())
    write_store(tmp_path / "store", chunk_records(unit_vectors(3, dim=4)))
    assert not dead.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store"]


def test_a_second_run_into_an_output_a_live_run_holds_is_refused_naming_it(
        store_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    queries, out = tmp_path / "q.jsonl", tmp_path / "out.jsonl"
    queries.write_text(VECTOR + "\n")
    with held(lock_of(out), str(out)):
        assert main(["run", "--config", str(store_config), "--queries", str(queries),
                     "--out", str(out)]) == 2
    assert f"is in use by process {os.getpid()} on {socket.gethostname()}" in (
        capsys.readouterr().err)
    assert not out.exists()


def test_the_lock_of_a_killed_run_is_taken_over(tmp_path: Path) -> None:
    lock = lock_of(tmp_path / "out.jsonl")
    lock.write_text(f"{socket.gethostname()} {_dead_pid()}\n")
    with held(lock, "out.jsonl"):
        assert lock.read_text().split()[:2] == [socket.gethostname(), str(os.getpid())]
    assert not lock.exists()


def test_a_second_index_of_one_store_is_refused_while_the_first_holds_it(
        tmp_path: Path) -> None:
    with held(lock_of(tmp_path / "store"), "the store"), pytest.raises(BusyError,
                                                                   match="in use by process"):
        write_store(tmp_path / "store", chunk_records(unit_vectors(3, dim=4)))
