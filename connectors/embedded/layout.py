"""The files of an embedded store and its manifest, the record of what they hold."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from connectors.embedder_port import EmbedderInfo
from connectors.errors import StoreNotFoundError

VECTORS_FILE = "vectors.npy"
RECORDS_FILE = "records.jsonl"
MANIFEST_FILE = "manifest.json"
LEXICAL_DIR = "bm25"
FORMAT = 2


@dataclass(frozen=True)
class Manifest:
    """Written last, so a store with a manifest is complete."""

    dimension: int
    count: int
    embedder: EmbedderInfo | None = None
    lexical: bool = False

    def write(self, root: Path) -> None:
        data: dict[str, Any] = {"format": FORMAT, "dimension": self.dimension,
                                "count": self.count, "lexical": self.lexical,
                                "embedder": self.embedder.to_dict() if self.embedder else None}
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
            embedder = data.get("embedder")
            return cls(int(data["dimension"]), int(data["count"]),
                       EmbedderInfo.from_dict(embedder) if embedder else None,
                       bool(data.get("lexical", False)))
        except (ValueError, KeyError, TypeError) as error:
            raise StoreNotFoundError(f"{where}: {MANIFEST_FILE} is unreadable ({error})") from None
