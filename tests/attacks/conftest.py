from __future__ import annotations

from pathlib import Path

import pytest

from tests.pipeline.cli_runs import index_store


@pytest.fixture(scope="module")
def store_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The config of a small indexed embedded store (see `index_store`)."""
    return index_store(tmp_path_factory.mktemp("e2e"))
