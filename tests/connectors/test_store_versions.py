"""Consistent reads: a committed version of the embedded store never changes, a reader keeps
reading the version it opened (vectors, records and BM25) whatever `index` commits meanwhile,
and a version is removed once no reader holds it."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from connectors.chunk_record import ChunkRecord
from connectors.embedded.layout import MANIFEST_FILE, STORE_FILES
from connectors.embedded.store import EmbeddedStore
from connectors.embedded.versions import CURRENT_FILE, VERSIONS_DIR, current_version
from connectors.embedded.writer import write_store
from connectors.search_port import SearchHit, SearchRequest
from core.errors import StoreNotFoundError
from pipeline.config.backends import pinned_port_factory
from pipeline.config.loader import load_settings
from tests.builders import unit_vectors


def _records(word: str, count: int = 4) -> list[ChunkRecord]:
    vectors = unit_vectors(count, dim=8)
    return [ChunkRecord(id=f"{word}{i}#chunk-0", vector=tuple(vectors[i].tolist()),
                        content=f"{word} fact number {i}", metadata={"docId": f"{word}{i}"})
            for i in range(count)]


def _text_hits(store: EmbeddedStore, text: str) -> list[tuple[str, str]]:
    (hits,) = store.search([SearchRequest(text=text, k=3)])
    assert isinstance(hits, list)
    return [(h.id, h.content) for h in hits if isinstance(h, SearchHit)]


def _versions(store: Path) -> list[str]:
    return sorted(p.name for p in (store / VERSIONS_DIR).iterdir())


def test_a_reader_keeps_its_version_records_and_bm25_while_index_commits_another(
        tmp_path: Path) -> None:
    store = tmp_path / "store"
    write_store(store, _records("apple"))
    before = EmbeddedStore.open(store)  # BM25 not loaded yet: its first text search loads it
    write_store(store, _records("zebra"))
    assert _text_hits(before, "zebra") == []
    assert _text_hits(before, "apple fact")[0] == ("apple0#chunk-0", "apple fact number 0")
    (hits,) = before.search([SearchRequest(vector=tuple(unit_vectors(4, dim=8)[2]), k=1)])
    assert [h.id for h in hits] == ["apple2#chunk-0"]  # type: ignore[union-attr]
    after = EmbeddedStore.open(store)
    assert _text_hits(after, "zebra fact")[0] == ("zebra0#chunk-0", "zebra fact number 0")


def test_a_version_is_removed_once_no_reader_holds_it(tmp_path: Path) -> None:
    store = tmp_path / "store"
    write_store(store, _records("apple"))
    first = current_version(store).name
    reader = EmbeddedStore.open(store)
    write_store(store, _records("zebra"))
    second = current_version(store).name
    assert _versions(store) == [first, second]  # the reader still holds the first
    reader.close()
    write_store(store, _records("mango"))
    assert _versions(store) == [current_version(store).name]


_HOLDER = textwrap.dedent("""
    import sys, time
    from connectors.embedded.store import EmbeddedStore
    store = EmbeddedStore.open(sys.argv[1])
    print("open", flush=True)
    time.sleep(60)
""")


def test_a_reader_in_another_process_holds_its_version_until_that_process_ends(
        tmp_path: Path) -> None:
    store = tmp_path / "store"
    write_store(store, _records("apple"))
    held = current_version(store).name
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(store)],
                              stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parents[2])
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        write_store(store, _records("zebra"))
        assert held in _versions(store)
    finally:
        holder.kill()
        holder.wait()
    write_store(store, _records("mango"))  # the kernel dropped the killed reader's lock
    assert held not in _versions(store) and len(_versions(store)) == 1


def test_a_run_reads_the_version_that_was_current_when_it_started(tmp_path: Path) -> None:
    store = tmp_path / "store"
    write_store(store, _records("apple"))
    settings = load_settings(overrides=[f"search.embedded.path={store}"])
    with pinned_port_factory(settings) as (open_port, version):
        write_store(store, _records("zebra"))
        port = open_port()
        assert version is not None and port.version == str(version)  # type: ignore[attr-defined]
        assert _text_hits(port, "zebra") == []  # type: ignore[arg-type]
        port.close()
    write_store(store, _records("mango"))
    assert version.name not in _versions(store)  # released when the run ended


def test_a_store_written_before_versions_opens_and_its_next_index_converts_it(
        tmp_path: Path) -> None:
    store = tmp_path / "store"
    write_store(store, _records("apple"))
    version = current_version(store)
    for name in (MANIFEST_FILE, *STORE_FILES):
        if (version / name).exists():
            (version / name).rename(store / name)
    shutil.rmtree(store / VERSIONS_DIR)
    (store / CURRENT_FILE).unlink()
    assert _text_hits(EmbeddedStore.open(store), "apple fact")[0][0] == "apple0#chunk-0"
    write_store(store, _records("zebra"))
    assert sorted(p.name for p in store.iterdir()) == [CURRENT_FILE, VERSIONS_DIR]
    assert _text_hits(EmbeddedStore.open(store), "zebra fact")[0][0] == "zebra0#chunk-0"


def test_a_current_file_that_names_no_version_is_a_clear_error(tmp_path: Path) -> None:
    store = tmp_path / "store"
    write_store(store, _records("apple"))
    (store / CURRENT_FILE).write_text("../../etc\n")
    with pytest.raises(StoreNotFoundError, match=r"CURRENT names '\.\./\.\./etc', which is no "
                                                 r"version of the store"):
        EmbeddedStore.open(store)
