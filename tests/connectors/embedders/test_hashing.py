from __future__ import annotations

import numpy as np
import pytest

from connectors.embedder_port import EmbedderPort
from connectors.embedders.hashing import HashingEmbedder
from core.errors import ConfigError, InvalidInputError


def test_same_text_same_vector_and_unit_norm() -> None:
    embedder = HashingEmbedder(64)
    first, second = embedder.embed(["Parse JSON text", "Parse JSON text"])
    assert isinstance(embedder, EmbedderPort)
    assert np.array_equal(first, second)
    assert np.linalg.norm(first) == pytest.approx(1.0, abs=1e-6)


def test_shared_words_score_higher_than_unrelated_text() -> None:
    query, near, far = HashingEmbedder(256).embed(
        ["read a csv file", "csv file reader", "sort numbers quickly"])
    assert float(query @ near) > float(query @ far)


def test_text_without_words_is_an_error_naming_the_text() -> None:
    with pytest.raises(InvalidInputError, match=r"text='\?\?\?'"):
        HashingEmbedder(8).embed(["???"])


def test_dimension_below_two_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="embedder.dim=1"):
        HashingEmbedder(1)
