"""Whether a run keeps state for the next (`--snapshot`), and whether it continues from PREV's
(`--previous`): decided once, on the driver, before the job is built. What cannot be continued
exactly is answered in full, and the plan says why."""

from __future__ import annotations

import dataclasses
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from connectors.embedded.lexical_bound import LexicalStatistics, TonightsStatistics
from connectors.store_changes import StoreChanges, StoreMark
from pipeline.config.backends import backend_of
from pipeline.config.settings import Settings
from pipeline.io.local_paths import is_local
from pipeline.io.run_io import RunIO
from pipeline.run.chain import candidate_chain
from pipeline.run.lexical_change import LexicalChange, kept_statistics
from pipeline.run.manifest import package_version
from pipeline.run.query_shards import shard_count
from pipeline.run.standing_texts import standing_texts
from pipeline.run.state_files import StateFolder, settings_fingerprint
from stages.support import counters

_log = logging.getLogger(__name__)
MAX_CHANGED_SHARE = 0.05
"""A store that changed by more than this share since PREV is searched in full: every
continued query searches the changed chunks, which then cost as much as the whole store."""


@dataclass(frozen=True)
class Continued:
    """PREV's state to continue from, and the store's changes since it was kept."""

    folder: StateFolder
    changes: StoreChanges
    lexical: LexicalChange | None = None
    """With lexical or hybrid recall: how the store's BM25 statistics moved since."""


@dataclass(frozen=True)
class ContinuationPlan:
    """`keeps`: where this run writes its state (None: it keeps none); `continues`: what it
    continues from (None: every query is answered in full, `refused` says why)."""

    keeps: StateFolder | None = None
    continues: Continued | None = None
    refused: str | None = None
    first_night: bool = False
    mark: StoreMark | None = None
    """What the run keeps of the store it reads, when it keeps state or continues."""
    lexical: LexicalStatistics | None = None
    """With lexical or hybrid recall: the BM25 statistics of that version, kept with it."""
    shards: int | None = None
    """How many shards the state this run reads or keeps is in (see `query_shards`)."""
    previous_empty: bool = False
    """`--previous` is an empty file: every result is new, and none is compared."""

    def start(self, settings: Settings) -> None:
        """Starts the state this run keeps, if any (see `StateFolder.start`)."""
        if self.keeps is not None and self.mark is not None and self.shards is not None:
            self.keeps.start(settings, self.mark, self.shards, self.lexical)

    @property
    def full_counter(self) -> str:
        """What a query answered in full is counted as when nothing is continued."""
        return counters.FULL_NEW_QUERY if self.first_night else counters.FULL_NOT_CONTINUABLE

    def described(self) -> dict[str, Any]:
        """What the manifest says of it (the state's files are named once written)."""
        described: dict[str, Any] = {}
        if self.continues is not None:
            described["continued_from"] = str(self.continues.folder.path)
            described["changed_chunks"] = self.continues.changes.chunks
        if self.refused is not None:
            described["answered_in_full"] = self.refused
        return described


def plan_continuation(settings: Settings, io: RunIO, version: Path | None,
                      previous_manifest: dict[str, Any] | None, from_code: bool = False
                      ) -> ContinuationPlan:
    """The plan of a run: it keeps state with `--snapshot` unless `why_not_kept` says why not
    (`version` is the embedded store version it reads; `from_code`: it reads a port given in
    code); it continues from PREV's state when `previous_manifest` (PREV's run's) names one
    that matches, of the same settings and the same rag-evidence version, and the store
    changed by at most `MAX_CHANGED_SHARE` since. A state keeps the shards of the state it
    continues from, else one shard per `QUERIES_PER_SHARD` of the run's queries."""
    plan = _planned(settings, io, version, previous_manifest, from_code)
    if io.previous is not None and _is_empty(io.previous.location):
        plan = dataclasses.replace(plan, previous_empty=True)
    if plan.continues is not None:
        shards = plan.continues.folder.shards()
    elif plan.keeps is not None:
        shards = shard_count(io.queries.count())
    else:
        return plan
    return dataclasses.replace(plan, shards=shards)


def _planned(settings: Settings, io: RunIO, version: Path | None,
             previous_manifest: dict[str, Any] | None, from_code: bool) -> ContinuationPlan:
    backend = backend_of(settings)
    why_not = why_not_kept(settings, version, from_code)
    current = None
    if not why_not and (io.snapshot is not None or io.previous is not None):
        assert backend.store_mark is not None
        found_mark = backend.store_mark(settings, version)
        if isinstance(found_mark, str):
            why_not = found_mark
        else:
            current = found_mark
    found: TonightsStatistics | None = None
    if not why_not and (io.snapshot is not None or io.previous is not None):
        statistics = _statistics(settings, version, io)
        if isinstance(statistics, str):
            why_not, current = statistics, None
        else:
            found = statistics
    keeps = None if why_not or io.snapshot is None else StateFolder.of_snapshot(
        io.snapshot.location)
    lexical = None if found is None else found.statistics
    if io.previous is None:
        return ContinuationPlan(keeps, mark=current, lexical=lexical)
    if why_not:
        return _refused(keeps, why_not)
    if previous_manifest is None:
        return ContinuationPlan(keeps, None, "--previous is empty (a first night)", True,
                                current, lexical=lexical)
    folder = StateFolder.of_snapshot(io.previous.location)
    if previous_manifest.get("rag_evidence") != package_version():
        return _refused(keeps, f"PREV was computed by rag-evidence "
                               f"{previous_manifest.get('rag_evidence')}, this is "
                               f"{package_version()}", current)
    mismatch = folder.matches(previous_manifest.get("state"))
    if mismatch:
        return _refused(keeps, mismatch, current)
    if folder.shards() is None:
        return _refused(keeps, "PREV's state is of an earlier format", current)
    if folder.settings_sha256() != settings_fingerprint(settings):
        return _refused(keeps, "the settings differ from PREV's run (rag, projection, "
                               "embedder or index)", current)
    assert current is not None
    changes = current.changes_since(folder.path)
    if isinstance(changes, str):
        return _refused(keeps, changes, current)
    if changes.chunks > MAX_CHANGED_SHARE * max(current.size, 1):
        return _refused(keeps, f"the store changed by {changes.chunks} chunks since PREV, more "
                               f"than {MAX_CHANGED_SHARE:.0%} of its {current.size}", current)
    change = None
    if found is not None:
        old = kept_statistics(folder.path)
        if old is None:
            return _refused(keeps, "PREV's state keeps no BM25 statistics", current, lexical)
        change = LexicalChange(old, *found)
    _log.info("continuing from %s: %d chunks changed since", folder.path, changes.chunks)
    return ContinuationPlan(keeps, Continued(folder, changes, change), mark=current,
                            lexical=lexical)


def _is_empty(location: str) -> bool:
    return is_local(location) and os.path.getsize(location) == 0


def why_not_kept(settings: Settings, version: Path | None, from_code: bool = False
                 ) -> str | None:
    """Why a run with `settings` keeps no state and continues from none (the README's commands
    table names each case), or None when it may (the store may still say why not: see
    `Backend.store_mark`). `version`: the embedded store version it reads; `from_code`: it
    reads a port given in code."""
    backend = backend_of(settings)
    if not settings.job.keep_state:
        return "job.keep-state is false"
    if backend.store_mark is None:
        return f"runs on {backend.noun} are not continued"
    if from_code:
        return "the run reads a port given in code, with no store version to tell changes by"
    seeing = [step.name for step in candidate_chain(settings.rag)
              if step.needs_query or step.needs_vectors]
    if seeing:
        return (f"{' and '.join(seeing)} {'sees' if len(seeing) == 1 else 'see'} the query or "
                "the chunks' vectors, which a continued night does not carry yet")
    if settings.rag.recall.mode != "dense" and backend.lexical_statistics is None:
        return (f"rag.recall.mode={settings.rag.recall.mode}: {backend.noun} keeps no BM25 "
                "statistics to continue a lexical list by")
    return None


def continued_audit_rate(settings: Settings) -> float:
    """The share of a continued night's queries audited against exact search
    (`pipeline.run.continued_audit`): the HNSW audit's rate on an HNSW store, none on a flat
    one (its continued lists are exact)."""
    embedded = settings.search.embedded
    return embedded.hnsw.audit_rate if embedded.index == "hnsw" else 0.0


def _refused(keeps: StateFolder | None, why: str, mark: StoreMark | None = None,
             lexical: LexicalStatistics | None = None) -> ContinuationPlan:
    _log.info("every query is answered in full: %s", why)
    return ContinuationPlan(keeps, None, why, mark=mark, lexical=lexical)


def _statistics(settings: Settings, version: Path | None, io: RunIO
                ) -> TonightsStatistics | str | None:
    """The BM25 statistics a run of `settings` keeps with its state (None: dense recall), or
    why the store has none (see `Backend.lexical_statistics`)."""
    backend = backend_of(settings)
    if settings.rag.recall.mode == "dense" or backend.lexical_statistics is None:
        return None
    return backend.lexical_statistics(settings, version, lambda: standing_texts(io.queries))
