"""Locks that hold: one holder at a time under a race, one lock per real store whatever path
names it, a holder that has not written its name yet still holds, a dead holder's lock is free
even when its pid now belongs to another process, and a lock that is no file is one line."""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import socket
import time
from pathlib import Path

import pytest

from connectors.embedded.writer import write_store
from connectors.ownership import BusyError, held, lock_of
from pipeline.cli.main import main
from tests.builders import chunk_records, unit_vectors


def _contend(lock: Path, inside: Path, rounds: int, overlaps: multiprocessing.Queue) -> None:
    """Takes the lock `rounds` times; counts the times another holder was inside with it."""
    seen = 0
    for _ in range(rounds):
        try:
            with held(lock, "the race"):
                try:
                    os.close(os.open(inside, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
                except FileExistsError:
                    seen += 1
                    continue
                time.sleep(0.0005)
                os.unlink(inside)
        except BusyError:
            continue
    overlaps.put(seen)


def test_six_processes_racing_for_one_lock_never_hold_it_together(tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork")
    overlaps: multiprocessing.Queue = context.Queue()
    lock, inside = tmp_path / ".out.lock", tmp_path / "inside"
    racers = [context.Process(target=_contend, args=(lock, inside, 150, overlaps))
              for _ in range(6)]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join(60)
    assert [racer.exitcode for racer in racers] == [0] * 6
    assert sum(overlaps.get(timeout=5) for _ in racers) == 0


def test_a_holder_that_has_not_written_its_name_yet_still_holds_the_lock(
        tmp_path: Path) -> None:
    lock = lock_of(tmp_path / "out.jsonl")
    with open(lock, "w") as handle:  # created and locked, nothing written yet
        fcntl.flock(handle, fcntl.LOCK_EX)
        with pytest.raises(BusyError, match="has not written its name yet"), held(
                lock, "out.jsonl"):
            pass
    assert lock.exists()


def test_a_dead_holders_lock_is_free_even_when_its_pid_is_a_live_unrelated_process(
        tmp_path: Path) -> None:
    lock = lock_of(tmp_path / "out.jsonl")
    lock.write_text(f"{socket.gethostname()} {os.getppid()} 1\n")  # a live, younger process
    with held(lock, "out.jsonl"):
        assert lock.read_text().split()[:2] == [socket.gethostname(), str(os.getpid())]


def test_two_paths_of_one_store_share_one_lock(tmp_path: Path) -> None:
    real = tmp_path / "real" / "store"
    real.parent.mkdir()
    write_store(real, chunk_records(unit_vectors(3, dim=4)))
    link = tmp_path / "link"
    link.symlink_to(real.parent)
    assert lock_of(link / "store") == lock_of(real)
    with held(lock_of(real), "the store"), pytest.raises(BusyError, match="in use by process"):
        write_store(link / "store", chunk_records(unit_vectors(3, dim=4)))


def test_a_lock_that_is_a_folder_is_one_line(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    chunks, store = tmp_path / "chunks.jsonl", tmp_path / "store"
    chunks.write_text("".join(r.model_dump_json() + "\n"
                              for r in chunk_records(unit_vectors(3, dim=4))))
    lock_of(store).mkdir()
    assert main(["index", "--set", f"search.embedded.path={store}",
                 "--chunks", str(chunks)]) == 2
    err = capsys.readouterr().err
    assert "is not a regular file" in err and "Traceback" not in err
