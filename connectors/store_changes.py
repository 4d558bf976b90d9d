"""What changed in a store since the version a run's state was kept of: all a run continued
from the previous night's candidates needs to know of the store (see `stages.continuation`),
told by each backend in its own way (the embedded store from two chunk tables,
Elasticsearch from its chunks' write versions and its deletion records)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

MARK_FILES = ("chunks.arrow", "elasticsearch.json")
"""The files a state folder keeps a `StoreMark` in, one per backend (the embedded store's chunk
table, an index's store version): named here, where the state's owner finds them without
importing a backend."""


@dataclass(frozen=True)
class StoreChanges:
    """`removed`: ids whose earlier vector is gone (deleted or rewritten); `entered`: ids whose
    vector is new (added or rewritten), in an order the backend keeps from night to night."""

    removed: frozenset[str]
    entered: tuple[str, ...]

    @property
    def chunks(self) -> int:
        """How many chunks changed: added, rewritten or deleted."""
        return len(self.removed.union(self.entered))


@runtime_checkable
class StoreMark(Protocol):
    """What a run that keeps state keeps of the store it read, and how the next run tells
    from it what changed since: one per backend.

    `name` is the store version as the state records it; `size` how many chunks it holds;
    `keep(folder)` writes into a state folder what the next run needs (in the one file
    `file`); `changes_since(folder)` gives the changes from the store a state kept in `folder`
    to this one, or why they cannot be told exactly.
    """

    @property
    def name(self) -> str: ...

    @property
    def size(self) -> int: ...

    @property
    def file(self) -> str: ...

    def keep(self, folder: Path) -> None: ...

    def changes_since(self, folder: Path) -> StoreChanges | str: ...
