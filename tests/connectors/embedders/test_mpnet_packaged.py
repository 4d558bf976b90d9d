"""all-mpnet-base-v2 from the five packages of a split zip (issue 48): put together offline,
every file checked against the publisher's digest kept in code, and run by the torch backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from connectors.embedders.model_location import CACHE_ENV, locate_model
from connectors.embedders.packaged_models import MPNET, PACKAGED, verify
from connectors.embedders.sentence_transformer import SentenceTransformerEmbedder
from core.errors import ConfigError

pytestmark = [pytest.mark.torch, pytest.mark.slow]

PUBLISHED_WEIGHTS = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("mpnet-cache")
    locate_model(MPNET, {CACHE_ENV: str(folder)}, backend="torch")
    return folder


def test_the_folder_is_put_together_with_the_publishers_weights(cache: Path) -> None:
    model = PACKAGED[(MPNET, "torch")]
    assert model.checked_members["model.safetensors"] == PUBLISHED_WEIGHTS
    folder = cache / MPNET
    assert {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()} == set(
        model.checked_members)  # no README, no desktop.ini, no joined zip left behind
    assert (folder / "model.safetensors").stat().st_size == 437_971_872


def test_a_changed_file_in_the_cache_is_refused_naming_it(cache: Path, tmp_path: Path) -> None:
    folder = cache / MPNET
    vocab = folder / "vocab.txt"
    original = vocab.read_bytes()
    try:
        vocab.write_bytes(original + b"extra\n")
        with pytest.raises(ConfigError, match=r"vocab.txt has SHA-256 .* not the packaged"):
            verify(PACKAGED[(MPNET, "torch")], folder)
    finally:
        vocab.write_bytes(original)


def test_it_embeds_768_dimensions_and_ranks_a_paraphrase_first(
        cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, str(cache))
    embedder = SentenceTransformerEmbedder(MPNET, batch_size=4, backend="torch")
    assert embedder.dimension == 768
    query, paraphrase, unrelated = embedder.embed([
        "How do I read a JSON document from a string?",
        "Deserialize a str containing a JSON document to a Python object.",
        "Push an item onto the heap, keeping the heap invariant."])
    assert float(query @ paraphrase) > float(query @ unrelated) + 0.2
