"""A run's state, beside its snapshot: `SNAPSHOT.state/` holds what the next run needs to
continue from it (see `stages.continuation`).

    queries.parquet  per query: id, fingerprint, the text's vector, the kept lists
    chunks.arrow     the chunk table (id, identity, fingerprint) of the store version it read
    state.json       the settings fingerprint and the store version

The run's manifest, written last, names these files with their SHA-256: a state is used only
when PREV's manifest names it and every file matches.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apache_beam as beam
import pyarrow as pa

from connectors.embedded.changes import STATE_CHUNKS_FILE as CHUNKS_FILE
from connectors.embedded.changes import keep_chunk_table
from connectors.embedded.chunk_table import ChunkTable
from core.errors import RagEvidenceError
from core.file_digest import file_sha256
from pipeline.config.backends import embedder_info
from pipeline.config.settings import Settings
from pipeline.io.json_file import write_json_file
from pipeline.io.owned_folders import check_owned_folder, claim_folder
from pipeline.io.parquet import ReadParquetQueries
from pipeline.io.records import UnreadableRest
from pipeline.io.single_file_sink import ParquetRows, WriteToSingleFile
from stages.models import QueryState, RecalledList

STATE_SUFFIX = ".state"
QUERIES_FILE = "queries.parquet"

SETTINGS_FILE = "state.json"
_STATE_FILES = (QUERIES_FILE, CHUNKS_FILE)
FORMAT = 1
STATE_SCHEMA = pa.schema([
    ("query_id", pa.string()), ("fingerprint", pa.string()),
    ("text_vector", pa.list_(pa.float32())),
    ("lists", pa.list_(pa.struct([("reason", pa.string()), ("ids", pa.list_(pa.string())),
                                  ("scores", pa.list_(pa.float64())),
                                  ("bound", pa.float64())])))])


def settings_fingerprint(settings: Settings) -> str:
    """SHA-256 of the settings a query's evidence depends on: the rag and projection settings,
    the embedder's settings and what it computes with (its model files' fingerprint: a model
    folder whose pooling or tokenizer changed under the same name is another embedder), and
    the backend and its index kind (not paths, batch sizes or the stemmer, which dense recall
    does not use)."""
    relevant = {"rag": settings.rag.model_dump(mode="json"),
                "projection": dataclasses.asdict(settings.projection),
                "embedder": settings.embedder.model_dump(mode="json"),
                "embedder_identity": _embedder_identity(settings),
                "backend": settings.search.backend,
                "index": settings.search.embedded.index}
    return hashlib.sha256(json.dumps(relevant, sort_keys=True).encode()).hexdigest()


def _embedder_identity(settings: Settings) -> dict[str, Any]:
    """What the configured embedder is by content; a run of vector queries only may have no
    model to describe, which is said instead (and so never equals a described one)."""
    try:
        return embedder_info(settings.embedder).to_dict()
    except RagEvidenceError as error:
        return {"unavailable": str(error)}


@dataclass(frozen=True)
class StateFolder:
    """The state folder of a snapshot."""

    path: Path

    @classmethod
    def of_snapshot(cls, snapshot: str) -> StateFolder:
        return cls(Path(f"{snapshot}{STATE_SUFFIX}"))

    @property
    def queries(self) -> str:
        return str(self.path / QUERIES_FILE)

    def check(self) -> None:
        """Refuses, before any work, a state folder this run could not replace: a file, a
        link to nothing, or a folder holding anything but an earlier state (see
        `owned_folders`).

        Raises:
            InvalidInputError: naming the folder and what is in it.
        """
        check_owned_folder(f"the state folder of --snapshot ({STATE_SUFFIX})", str(self.path),
                           SETTINGS_FILE, _STATE_FILES)

    def start(self, settings: Settings, version: Path, chunks: ChunkTable) -> None:
        """Empties the folder of an earlier run's state (its files, nothing else: see `check`)
        and writes what the driver knows: the settings fingerprint (the folder's marker, first),
        the store version and its chunk table (`chunks`). The queries are written by the
        run."""
        claim_folder(self.path, SETTINGS_FILE, _STATE_FILES)
        write_json_file(str(self.path / SETTINGS_FILE),
                        {"format": FORMAT, "settings_sha256": settings_fingerprint(settings),
                         "store_version": version.name}, sort_keys=True)
        keep_chunk_table(chunks, self.path)

    def described(self) -> dict[str, Any]:
        """What the manifest says of it: the folder and each file's SHA-256."""
        return {"folder": str(self.path), "sha256": {
            name: file_sha256(str(self.path / name))
            for name in (QUERIES_FILE, CHUNKS_FILE, SETTINGS_FILE)}}

    def matches(self, described: object) -> str | None:
        """None when `described` (a manifest's entry) names this folder's files as they are;
        else what differs."""
        if not isinstance(described, dict) or not isinstance(described.get("sha256"), dict):
            return "its run's manifest names no state (a run without --snapshot's state)"
        for name, digest in described["sha256"].items():
            path = self.path / str(name)
            if not path.is_file():
                return f"the state file {path} is missing"
            if file_sha256(str(path)) != digest:
                return f"the state file {path} does not match its manifest"
        return None

    def settings_sha256(self) -> str | None:
        try:
            document = json.loads((self.path / SETTINGS_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        found = document.get("settings_sha256") if isinstance(document, dict) else None
        return found if isinstance(found, str) else None


def state_row(state: QueryState) -> dict[str, Any]:
    return {"query_id": state.query_id, "fingerprint": state.fingerprint,
            "text_vector": None if state.text_vector is None else list(state.text_vector),
            "lists": [{"reason": k.reason, "ids": list(k.ids), "scores": list(k.scores),
                       "bound": k.bound} for k in state.lists]}


def state_of_row(record: tuple[int, dict[str, Any] | UnreadableRest]) -> QueryState:
    """A state row as read back. A state file that does not read fails the job: it is what
    this run's manifest was checked against, so something changed it during the run."""
    _, row = record
    if isinstance(row, UnreadableRest):
        raise ValueError(f"the state of --previous cannot be read: {row}")
    vector = row.get("text_vector")
    return QueryState(row["query_id"], row["fingerprint"],
                      None if vector is None else tuple(vector),
                      tuple(RecalledList(k["reason"], tuple(k["ids"]), tuple(k["scores"]),
                                         k["bound"]) for k in row.get("lists") or ()))


class ReadState(beam.PTransform[beam.pvalue.PBegin, beam.PCollection[QueryState]]):
    """A state folder's queries, read on the runner's workers."""

    def __init__(self, folder: StateFolder) -> None:
        super().__init__()
        self._folder = folder

    def expand(self, begin: beam.pvalue.PBegin) -> beam.PCollection[QueryState]:
        return (begin
                | "Rows" >> ReadParquetQueries(self._folder.queries)
                | "States" >> beam.Map(state_of_row).with_output_types(QueryState))


class WriteState(beam.PTransform[beam.PCollection[QueryState], None]):
    """Every query's state into the folder's `queries.parquet`."""

    def __init__(self, folder: StateFolder) -> None:
        super().__init__()
        self._folder = folder

    def expand(self, states: beam.PCollection[QueryState]) -> None:
        (states
         | "Rows" >> beam.Map(state_row)
         | "Write" >> WriteToSingleFile(self._folder.queries, ParquetRows(STATE_SCHEMA)))
