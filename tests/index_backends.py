"""One store, embedded or Elasticsearch, seen through the same questions: the `backend`
fixture of the incremental-index tests and the nightly attacks."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from elasticsearch import Elasticsearch

from connectors.embedded.layout import RECORDS_FILE, VECTORS_FILE
from connectors.embedded.versions import current_version
from pipeline.config.loader import load_settings
from pipeline.config.settings import Settings

Snapshot = dict[str, tuple[str, tuple[float, ...]]]
"""Per chunk id: its content and stored vector."""


class Backend:
    """One store, embedded or Elasticsearch, seen through the same questions."""

    def __init__(self, overrides: list[str], client: Elasticsearch | None = None,
                 index: str | None = None) -> None:
        self.overrides, self._client, self._index = overrides, client, index

    def settings(self, *extra: str) -> Settings:
        return load_settings(overrides=[*self.overrides, "embedder.dim=32",
                                        "chunking.max-chars=60", *extra])

    def snapshot(self) -> Snapshot:
        if self._client is None:
            return embedded_snapshot(Path(self.settings().search.embedded.path))
        found = self._client.search(index=self._index, size=1000,
                                    query={"match_all": {}})["hits"]["hits"]
        return {h["_id"]: (h["_source"]["content"], tuple(h["_source"]["embedding"]))
                for h in found}


def embedded_snapshot(store: Path) -> Snapshot:
    version = current_version(store)
    vectors = np.load(version / VECTORS_FILE)
    lines = (version / RECORDS_FILE).read_text().splitlines()
    return {json.loads(line)["id"]: (json.loads(line)["content"], tuple(vectors[row].tolist()))
            for row, line in enumerate(lines)}


@pytest.fixture(params=["embedded", pytest.param("elasticsearch", marks=pytest.mark.live_es)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "embedded":
        return Backend([f"search.embedded.path={tmp_path / 'store'}"])
    url, index = request.getfixturevalue("es_url"), request.getfixturevalue("es_index")
    client = request.getfixturevalue("es_client")
    return Backend(["search.backend=elasticsearch", f"search.elasticsearch.hosts=[{url}]",
                    f"search.elasticsearch.index={index}",
                    "search.elasticsearch.index-options={type: flat}"], client, index)


def write_docs(root: Path, docs: dict[str, list[str]]) -> Path:
    """Writes each document as its paragraphs (of 31 to 60 characters: one chunk each)."""
    root.mkdir(parents=True, exist_ok=True)
    for old in root.iterdir():
        old.unlink()
    for name, paragraphs in docs.items():
        (root / name).write_text("\n\n".join(paragraphs))
    return root

