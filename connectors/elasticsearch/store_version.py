"""An index's store versions: what lets a run tell what changed in an Elasticsearch index since
the night its state was kept, without a copy of the index (issue 47).

Each `index` writes one version, N, one more than any begun before:
- it records `writing: N` in the index's `_meta` before it writes anything;
- every chunk it writes carries `rag_evidence_version: N` (`VERSION_FIELD`, mapped as a long);
- every chunk it deletes is first recorded, `{version: N}` under the chunk's id, in the side
  index `{index}.rag-evidence-deletions`, then deleted;
- once everything is written and the indexes refreshed, it records `committed: N`.

A run reads the committed version, C, and keeps it with its state; the next run's changes are
the chunks written with a version above C (rewritten or added: their earlier vectors, if any,
no longer stand) and the ids deleted above C. A chunk an unfinished `index` wrote after C is
counted as changed by every later night until a later `index` commits, which is safe: a
changed chunk is searched again, never trusted.

What this cannot see: chunks written or deleted by another tool, or by a rag-evidence from
before versions. A run refuses to continue when chunks without a version appeared since
PREV (`unversioned_chunks`); deletions by another tool leave kept ids the index no longer
holds, and a query whose kept hits cannot be scored is recalled in full.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from elasticsearch import Elasticsearch, NotFoundError

from connectors.chunk_writer_port import WriteReport
from connectors.elasticsearch.bulk_writer import write_documents
from connectors.elasticsearch.catalog import every_hit
from connectors.elasticsearch.client import META_KEY, index_mappings, index_settings, open_client
from connectors.elasticsearch.config import ElasticsearchConfig
from connectors.elasticsearch.layouts import VERSION_FIELD, VERSION_MAPPING
from connectors.elasticsearch.retry import call_with_retries
from connectors.events import EventHook, ignore_event
from connectors.store_changes import MARK_FILES, StoreChanges
from core.errors import KnowledgeSearchError, StoreNotFoundError

DELETIONS_SUFFIX = ".rag-evidence-deletions"
"""The side index of an index's deletion records: `{version}` under each deleted chunk's id."""
_VERSIONS_KEY = "store_version"
KEPT_FILE = MARK_FILES[1]
"""In a state folder: the index, its committed store version and its unversioned chunks, as
the run that kept it read them."""


@dataclass(frozen=True)
class IndexVersion:
    """The versions an index's `_meta` records: the last an `index` finished (`committed`) and
    the last one begun (`writing`); None where none was recorded."""

    committed: int | None = None
    writing: int | None = None

    @classmethod
    def of(cls, mappings: dict[str, Any]) -> IndexVersion:
        recorded = ((mappings.get("_meta") or {}).get(META_KEY) or {}).get(_VERSIONS_KEY)
        if not isinstance(recorded, dict):
            return cls()
        return cls(*(found if isinstance(found := recorded.get(key), int) else None
                     for key in ("committed", "writing")))

    def next(self) -> int:
        """The version an `index` begun now writes."""
        return max(self.committed or 0, self.writing or 0) + 1


def deletions_index(config: ElasticsearchConfig) -> str:
    return config.index + DELETIONS_SUFFIX


def recorded_version(client: Elasticsearch, config: ElasticsearchConfig) -> IndexVersion:
    """The versions the index records now.

    Raises:
        StoreNotFoundError: no such index.
    """
    mappings = index_mappings(client, config)
    if mappings is None:
        raise StoreNotFoundError(f"search.elasticsearch.index={config.index!r}: no such index "
                                 f"on {list(config.hosts)!r}")
    return IndexVersion.of(mappings)


def begin_write(client: Elasticsearch, config: ElasticsearchConfig) -> int:
    """Records that an `index` writes the next version (mapping `VERSION_FIELD` and creating
    the deletions index where missing); returns that version. An index never versioned
    (new, or created again under its name) starts with no deletion records: a side index left
    by an earlier index of the name is removed, whose records would name its chunks."""
    mappings = index_mappings(client, config) or {}
    recorded = IndexVersion.of(mappings)
    side = deletions_index(config)
    if recorded == IndexVersion():
        call_with_retries(lambda: client.options(ignore_status=404).indices.delete(index=side),
                          config.retry, f"removing index {side!r}", config.hosts)
    version = recorded.next()
    _record(client, config, mappings, writing=version)
    if not call_with_retries(lambda: client.indices.exists(index=side), config.retry,
                             f"looking for index {side!r}", config.hosts):
        call_with_retries(lambda: client.options(ignore_status=400).indices.create(
            index=side, mappings={"properties": {"version": VERSION_MAPPING}}),
            config.retry, f"creating index {side!r}", config.hosts)
    return version


def commit_write(client: Elasticsearch, config: ElasticsearchConfig, version: int) -> None:
    """Records `version` as committed (after its chunks and deletion records are refreshed);
    a later version committed meanwhile stays."""
    side = deletions_index(config)
    call_with_retries(lambda: client.indices.refresh(index=side), config.retry,
                      f"refreshing index {side!r}", config.hosts)
    mappings = index_mappings(client, config) or {}
    if (IndexVersion.of(mappings).committed or 0) < version:
        _record(client, config, mappings, committed=version)


def record_deletions(client: Elasticsearch, config: ElasticsearchConfig, ids: Iterable[str],
                     version: int, *, on_event: EventHook = ignore_event) -> WriteReport:
    """Records that `ids` are deleted by `version` (before they are deleted)."""
    return write_documents(client, config, deletions_index(config),
                           ((i, {"version": version}) for i in ids), on_event=on_event)


def changes_since(client: Elasticsearch, config: ElasticsearchConfig, version: int, *,
                  on_event: EventHook = ignore_event) -> StoreChanges:
    """The changes of the index after `version`: the ids written since (entered, in id order,
    and removed: their earlier vectors no longer stand) and those deleted since (removed)."""
    after = {"query": {"range": {VERSION_FIELD: {"gt": version}}}, "source": False}
    written = sorted(str(hit["_id"]) for hit in every_hit(
        client, config, config.index, after, on_event=on_event))
    deleted_since = {"query": {"range": {"version": {"gt": version}}}, "source": False}
    deleted = {str(hit["_id"]) for hit in every_hit(
        client, config, deletions_index(config), deleted_since, on_event=on_event)}
    return StoreChanges(frozenset(written) | deleted, tuple(written))


def chunk_counts(client: Elasticsearch, config: ElasticsearchConfig) -> tuple[int, int]:
    """How many chunks the index holds, and how many of them carry no version (written by
    another tool, or before versions)."""
    def count(**query: Any) -> int:
        found = call_with_retries(lambda: client.count(index=config.index, **query),
                                  config.retry, f"counting the chunks of {config.index!r}",
                                  config.hosts)
        return int(found["count"])

    unversioned = {"bool": {"must_not": [{"exists": {"field": VERSION_FIELD}}]}}
    return count(), count(query=unversioned)


def index_uuids(client: Elasticsearch, config: ElasticsearchConfig) -> list[str]:
    """The uuid of each index `config.index` names (one, unless it is an alias of several)."""
    return sorted(str(found["uuid"]) for found in index_settings(client, config))


def _record(client: Elasticsearch, config: ElasticsearchConfig, mappings: dict[str, Any],
            **versions: int) -> None:
    """Puts `versions` into the index's `_meta` (which a mapping update replaces whole: the
    rest is written back as found), and maps `VERSION_FIELD`."""
    meta = dict(mappings.get("_meta") or {})
    ours = dict(meta.get(META_KEY) or {})
    ours[_VERSIONS_KEY] = {**dict(ours.get(_VERSIONS_KEY) or {}), **versions}
    meta[META_KEY] = ours
    call_with_retries(lambda: client.indices.put_mapping(
        index=config.index, meta=meta, properties={VERSION_FIELD: VERSION_MAPPING}),
        config.retry, f"recording the store version of {config.index!r}", config.hosts)


@dataclass(frozen=True)
class IndexMark:
    """The `StoreMark` of an index: which index it is (`uuid`: an alias may name another one
    tomorrow, and an index deleted and created again under its name is another), its
    committed store version and how many of its chunks carry no version; the changes since a
    kept mark are asked of the index itself (`changes_since`)."""

    config: ElasticsearchConfig
    uuid: str
    version: int
    size: int
    unversioned: int
    file: str = KEPT_FILE

    @classmethod
    def read(cls, config: ElasticsearchConfig) -> IndexMark | str:
        """The index's mark now, or why a run of it cannot be continued (it records no
        committed version, or its name is an alias of several indexes)."""
        client = open_client(config)
        try:
            uuids = index_uuids(client, config)
            if len(uuids) != 1:
                return (f"index {config.index!r} names {len(uuids)} indexes (an alias of "
                        "several): which of them changed cannot be told")
            committed = recorded_version(client, config).committed
            if committed is None:
                return (f"index {config.index!r} records no store version: only an index "
                        "that `rag-evidence index` wrote (this release or later) tells its "
                        "changes; its next `index` records one")
            return cls(config, uuids[0], committed, *chunk_counts(client, config))
        finally:
            client.close()

    @property
    def name(self) -> str:
        return f"{self.config.index}@{self.version}"

    def keep(self, folder: Path) -> None:
        (folder / self.file).write_text(json.dumps(
            {"index": self.config.index, "uuid": self.uuid, "version": self.version,
             "unversioned": self.unversioned}, sort_keys=True), encoding="utf-8")

    def changes_since(self, folder: Path) -> StoreChanges | str:
        try:
            kept = json.loads((folder / self.file).read_text(encoding="utf-8"))
            index, uuid, version, unversioned = (str(kept["index"]), str(kept["uuid"]),
                                                 int(kept["version"]), int(kept["unversioned"]))
        except (OSError, ValueError, KeyError, TypeError):
            return f"PREV's state keeps no store version of an index ({self.file})"
        if index != self.config.index:
            return f"PREV read index {index!r}, this run reads {self.config.index!r}"
        if uuid != self.uuid:
            return (f"{index!r} is another index than PREV read (uuid {self.uuid}, PREV's "
                    f"{uuid}): created again, or an alias moved")
        if version > self.version:
            return (f"index {index!r} records store version {self.version}, older than "
                    f"PREV's {version} (was it created again?)")
        if self.unversioned > unversioned:
            return (f"{self.unversioned - unversioned} chunks without a store version "
                    f"appeared in index {index!r} since PREV (written by another tool, or "
                    "by a rag-evidence from before versions): their changes cannot be told")
        client = open_client(self.config)
        try:
            return changes_since(client, self.config, version)
        except (KnowledgeSearchError, NotFoundError) as error:  # deletion records removed
            return f"the changes of index {index!r} since PREV cannot be read: {error}"
        finally:
            client.close()
