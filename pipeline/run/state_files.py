"""A run's state, beside its snapshot: `SNAPSHOT.state/` holds what the next run needs to
continue from it (see `stages.continuation`).

    queries.arrow    per query, by shard: its record's digest, fingerprint, what it searches
                     with, the kept lists and its result line (see `state_shards`)
    chunks.arrow     the embedded store: the chunk table (id, identity, fingerprint) of the
                     version it read
    elasticsearch.json  Elasticsearch: the index and the store version it read
    lexical.json     with lexical or hybrid recall: that version's BM25 statistics (see
                     `lexical_change`)
    state.json       the format, the settings fingerprint, the store version and the shards

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

from connectors.embedded.lexical_bound import LexicalStatistics
from connectors.ownership import owned_suffix
from connectors.store_changes import MARK_FILES, StoreMark
from core.errors import RagEvidenceError
from core.file_digest import file_sha256
from pipeline.config.backends import embedder_info
from pipeline.config.settings import Settings
from pipeline.io.json_file import write_json_file
from pipeline.io.owned_folders import check_owned_folder, claim_folder
from pipeline.run.lexical_change import KEPT_FILE as LEXICAL_FILE
from pipeline.run.lexical_change import keep_statistics

STATE_SUFFIX = ".state"
QUERIES_FILE = "queries.arrow"
LEGACY_FILES = ("queries.parquet",)
"""What an earlier format's state held: removed with the rest when a run replaces it."""

SETTINGS_FILE = "state.json"
_STATE_FILES = (QUERIES_FILE, *MARK_FILES, LEXICAL_FILE, *LEGACY_FILES)
_DESCRIBED = (QUERIES_FILE, SETTINGS_FILE)
_DESCRIBED_IF_KEPT = (*MARK_FILES, LEXICAL_FILE)
FORMAT = 2


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

    @property
    def parts(self) -> str:
        """Where this process writes the parts of `queries` before it merges them (a leftover
        of a killed run is removed with the rest: see `owned_folders`)."""
        return str(self.path / f"{QUERIES_FILE}.parts-{owned_suffix()}")

    def start(self, settings: Settings, mark: StoreMark, shards: int,
              lexical: LexicalStatistics | None = None) -> None:
        """Empties the folder of an earlier run's state (its files, nothing else: see `check`)
        and writes what the driver knows: the settings fingerprint (the folder's marker, first),
        the store version, the number of shards, what the next run tells the store's changes
        by (`mark`) and its BM25 statistics (`lexical`, when given). The queries are written
        by the run."""
        claim_folder(self.path, SETTINGS_FILE, _STATE_FILES)
        write_json_file(str(self.path / SETTINGS_FILE),
                        {"format": FORMAT, "settings_sha256": settings_fingerprint(settings),
                         "store_version": mark.name, "shards": shards}, sort_keys=True)
        mark.keep(self.path)
        if lexical is not None:
            keep_statistics(lexical, self.path)

    def files(self) -> list[str]:
        """The files a manifest names, with their SHA-256."""
        return [str(self.path / name) for name in self._described_names()]

    def described(self) -> dict[str, Any]:
        """What the manifest says of it: the folder and each file's SHA-256."""
        return {"folder": str(self.path), "sha256": {
            name: file_sha256(str(self.path / name)) for name in self._described_names()}}

    def _described_names(self) -> tuple[str, ...]:
        return _DESCRIBED + tuple(name for name in _DESCRIBED_IF_KEPT
                                  if (self.path / name).is_file())

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
        found = self._settings().get("settings_sha256")
        return found if isinstance(found, str) else None

    def shards(self) -> int | None:
        """How many shards the state's queries are in; None for an earlier format's state."""
        document = self._settings()
        found = document.get("shards")
        if document.get("format") != FORMAT or not isinstance(found, int) or found < 1:
            return None
        return found

    def _settings(self) -> dict[str, Any]:
        try:
            document = json.loads((self.path / SETTINGS_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return document if isinstance(document, dict) else {}
