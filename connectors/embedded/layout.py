"""The files of one version of an embedded store, and its manifest: the record of what they
hold (see `versions` for how versions follow each other)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from connectors.embedder_port import EmbedderInfo
from core.errors import StoreNotFoundError
from core.stemmer import STEMMER_NAMES, UNSTEMMED, StemmerName

VECTORS_FILE = "vectors.npy"
RECORDS_FILE = "records.jsonl"
OFFSETS_FILE = "records.offsets.npy"
HNSW_FILE = "hnsw.faiss"
MANIFEST_FILE = "manifest.json"
LEXICAL_DIR = "bm25"
CHUNKS_FILE = "chunks.arrow"
STORE_FILES = (VECTORS_FILE, RECORDS_FILE, OFFSETS_FILE, HNSW_FILE, LEXICAL_DIR, CHUNKS_FILE)
"""The files of one version of a store, besides its manifest."""
FORMAT = 4
IndexKind = Literal["flat", "hnsw"]


@dataclass(frozen=True)
class Manifest:
    """Written last, so a store with a manifest is complete. `stemmer` is the one its lexical
    index was built with (a store from before stemming has `none`); `metadata_keys` are the
    metadata keys its chunks carry (None for a store from before they were recorded)."""

    dimension: int
    count: int
    embedder: EmbedderInfo | None = None
    lexical: bool = False
    index: IndexKind = "flat"
    stemmer: StemmerName = UNSTEMMED
    metadata_keys: tuple[str, ...] | None = None

    def write(self, root: Path) -> None:
        data: dict[str, Any] = {"format": FORMAT, "dimension": self.dimension,
                                "count": self.count, "lexical": self.lexical, "index": self.index,
                                "stemmer": self.stemmer,
                                "embedder": self.embedder.to_dict() if self.embedder else None,
                                "metadata_keys": (list(self.metadata_keys)
                                                  if self.metadata_keys is not None else None)}
        (root / MANIFEST_FILE).write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")

    @classmethod
    def read(cls, root: Path) -> Manifest:
        """Raises StoreNotFoundError naming the path when there is no readable manifest."""
        where = f"search.embedded.path={str(root)!r}"
        path = root / MANIFEST_FILE
        if not path.is_file():
            raise StoreNotFoundError(
                f"{where}: no embedded store there (build one with `rag-evidence index`)")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            embedder, keys = data.get("embedder"), data.get("metadata_keys")
            return cls(int(data["dimension"]), int(data["count"]),
                       EmbedderInfo.from_dict(embedder) if embedder else None,
                       bool(data.get("lexical", False)), _index_kind(data.get("index")),
                       _stemmer(data.get("stemmer")),
                       None if keys is None else tuple(str(k) for k in keys))
        except (ValueError, KeyError, TypeError) as error:
            raise StoreNotFoundError(f"{where}: {MANIFEST_FILE} is unreadable ({error})") from None


def mapped_array(path: Path) -> np.ndarray:
    """A store's `.npy` file, memory-mapped.

    Raises:
        StoreNotFoundError: naming the file, when it is missing, cut or no array file.
    """
    try:
        return np.load(path, mmap_mode="r")
    except (OSError, ValueError) as error:
        raise StoreNotFoundError(damaged(path, error)) from None


def damaged(path: Path, error: BaseException) -> str:
    """What to say of a store file that does not read as what it should be."""
    return (f"the embedded store's file {str(path)!r} is damaged ({error}); restore the store "
            "from a copy, or build it again with `rag-evidence index --rebuild`")


def _index_kind(value: object) -> IndexKind:
    if value in (None, "flat"):
        return "flat"
    if value == "hnsw":
        return "hnsw"
    raise ValueError(f"index {value!r} is not flat or hnsw")


def _stemmer(value: object) -> StemmerName:
    if value is None:
        return UNSTEMMED
    if value in STEMMER_NAMES:
        return value  # type: ignore[return-value]
    raise ValueError(f"stemmer {value!r} is not one of {list(STEMMER_NAMES)}")
