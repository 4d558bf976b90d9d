"""Pytest fixtures for DirectRunner tests of pipelines that use `EvidenceTransform`.

Enable them in a `conftest.py` with `pytest_plugins = ["pipeline.pytest_plugin"]`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import pytest

from connectors.embedder_port import EmbedderFactory
from connectors.search_port import PortFactory
from pipeline.config.settings import Settings
from pipeline.testing import (
    chunk_records,
    deterministic_embedder,
    memory_port_factory,
    test_settings,
)


@pytest.fixture
def evidence_settings() -> Settings:
    """Default settings for the test helpers' dimension."""
    return test_settings()


@pytest.fixture
def evidence_embedder() -> EmbedderFactory:
    """The deterministic embedder the helpers' records are embedded with."""
    return deterministic_embedder()


@pytest.fixture
def memory_port() -> Callable[[Mapping[str, Sequence[str]]], PortFactory]:
    """Builds the factory of an in-memory port from `{doc id: chunk texts}`."""
    return lambda documents: memory_port_factory(chunk_records(documents))
