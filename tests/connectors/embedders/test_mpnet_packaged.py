"""all-mpnet-base-v2 from the five packages of a split zip (issue 48): put together offline,
every file checked against the publisher's digest kept in code, and run by the torch backend."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from connectors.embedders import onnx_export
from connectors.embedders.model_fingerprint import model_fingerprint
from connectors.embedders.model_location import CACHE_ENV, locate_model
from connectors.embedders.packaged_models import MPNET, MPNET_CHECKPOINT, PACKAGED, verify
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


@pytest.fixture(scope="module")
def exported(cache: Path) -> Path:
    """The ONNX rendition, exported into the module's cache from the checked weights."""
    return locate_model(MPNET, {CACHE_ENV: str(cache)}, backend="onnx")


def test_the_onnx_rendition_is_exported_once_from_the_checked_weights_and_agrees_with_torch(
        cache: Path, exported: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert exported == cache / "onnx-export" / MPNET
    record = json.loads((exported / "export.json").read_text())
    assert record["source"] == MPNET_CHECKPOINT == model_fingerprint(cache / MPNET)
    assert not (exported / "model.safetensors").exists()
    monkeypatch.setenv(CACHE_ENV, str(cache))
    onnx = SentenceTransformerEmbedder(MPNET, batch_size=4, backend="onnx")
    torch = SentenceTransformerEmbedder(MPNET, batch_size=4, backend="torch")
    texts = ["Deserialize a str containing a JSON document.", "heap queue", "a " * 300]
    cosines = np.sum(onnx.embed(texts) * torch.embed(texts), axis=1)
    assert float(cosines.min()) > 0.9999
    assert onnx.info.checkpoint == torch.info.weights  # one model, either backend
    modified = (exported / "model.onnx").stat().st_mtime_ns
    locate_model(MPNET, {CACHE_ENV: str(cache)}, backend="onnx")
    assert (exported / "model.onnx").stat().st_mtime_ns == modified  # not exported again


def test_a_changed_export_is_refused_naming_it(cache: Path, exported: Path,
                                               tmp_path: Path) -> None:
    copy = tmp_path / "cache"
    shutil.copytree(cache, copy)
    with open(copy / "onnx-export" / MPNET / "model.onnx", "ab") as handle:
        handle.write(b"\0")
    with pytest.raises(ConfigError, match=r"model.onnx has SHA-256 .* not the exported"):
        locate_model(MPNET, {CACHE_ENV: str(copy)}, backend="onnx")


def test_without_the_exporter_the_onnx_rendition_names_the_extra(
        cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fresh = tmp_path / "cache"
    shutil.copytree(cache / MPNET, fresh / MPNET)  # the torch folder, no export yet
    monkeypatch.setattr(onnx_export, "EXPORTER", ("no_such_exporter_module",))
    with pytest.raises(ConfigError, match=r"made once with torch and onnx.*\[quality\]"):
        locate_model(MPNET, {CACHE_ENV: str(fresh)}, backend="onnx")
    assert not (fresh / "onnx-export" / MPNET).exists()
