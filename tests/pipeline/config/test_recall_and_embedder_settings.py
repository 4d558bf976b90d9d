"""The settings issue 6 added: recall mode, fusion, dedup key, the embedder."""

from __future__ import annotations

import importlib.util
import logging
import shutil
from pathlib import Path

import pytest

from connectors.embedders.model_location import locate_model
from connectors.embedders.onnx_encoder import ONNX_FILES
from core.errors import ConfigError
from pipeline.config.backends import open_embedder
from pipeline.config.loader import load_settings


def test_recall_defaults_to_dense_with_rrf_k_60() -> None:
    recall = load_settings().rag.recall
    assert (recall.mode, recall.rrf_k, recall.weights) == ("dense", 60, {})


def test_hybrid_weights_reach_the_fusion_stage() -> None:
    settings = load_settings(overrides=["rag.recall.mode=hybrid", "rag.recall.rrf-k=10",
                                        "rag.recall.weights={bm25: 0.5}"])
    rrf = settings.rag.recall.rrf()
    assert (rrf.k, rrf.weight("bm25:text"), rrf.weight("knn:text")) == (10, 0.5, 1.0)


@pytest.mark.parametrize(("override", "message"), [
    ("rag.recall.mode=semantic", "rag.recall.mode"),
    ("rag.recall.weights={splade: 1}", "rag.recall.weights.splade"),
    ("rag.recall.weights={bm25: -1}", "rag.recall.weights.bm25"),
    ("rag.dedup-key=doc", "rag.dedup-key"),
    ("embedder.kind=openai", "embedder.kind"),
])
def test_bad_recall_and_embedder_values_are_named(override: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_settings(overrides=[override])


def test_a_sentence_transformers_embedder_needs_a_model() -> None:
    with pytest.raises(ConfigError, match="embedder.model is required"):
        load_settings(overrides=["embedder.kind=sentence-transformers"])


def test_the_embedder_settings_are_all_keys_of_one_section() -> None:
    embedder = load_settings(overrides=[
        "embedder.kind=sentence-transformers", "embedder.model=/models/e5",
        "embedder.batch-size=16", "embedder.query-prefix='query: '",
        "embedder.document-prefix='passage: '", "embedder.normalize=false"]).embedder
    assert (embedder.model, embedder.batch_size, embedder.query_prefix,
            embedder.document_prefix, embedder.normalize, embedder.dim) == (
        "/models/e5", 16, "query: ", "passage: ", False, None)


ROOT = Path(__file__).resolve().parents[3]


def test_auto_is_the_model_where_it_can_run_as_the_first_config_says(minilm: str) -> None:
    """configs/local.yaml, the config a user copies first, embeds as the demo does."""
    embedder = load_settings(str(ROOT / "configs" / "local.yaml")).embedder
    assert (embedder.kind, embedder.model, embedder.backend) == (
        "sentence-transformers", minilm, "onnx")


def test_auto_without_a_model_falls_back_to_hashing_and_says_what_to_install(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in (
        "onnxruntime", "sentence_transformers") else real(name, *a))  # neither backend
    with caplog.at_level(logging.WARNING):
        embedder = load_settings(overrides=["embedder.kind=auto"]).embedder
    assert embedder.kind == "hashing"
    assert "pip install 'rag-evidence[semantic]'" in caplog.text
    assert "matches words, not meaning" in caplog.text


def _torch_only_copy(minilm: str, tmp_path: Path, rendition: str = "onnx") -> Path:
    """A packaged rendition's folder without its ONNX files: a model of torch weights only."""
    folder = tmp_path / "torch-only"
    shutil.copytree(locate_model(minilm, backend=rendition), folder)
    for name in ONNX_FILES:
        (folder / name).unlink(missing_ok=True)
    return folder


def test_backend_auto_runs_a_model_with_onnx_weights_on_onnx(minilm: str,
                                                              tmp_path: Path) -> None:
    folder = tmp_path / "copy"
    shutil.copytree(locate_model(minilm), folder)
    for model in (minilm, str(folder)):
        embedder = load_settings(overrides=["embedder.kind=sentence-transformers",
                                            f"embedder.model={model}"]).embedder
        assert embedder.backend == "onnx"


def test_backend_auto_without_onnx_weights_or_torch_names_both_ways_out(
        minilm: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name ==
                        "sentence_transformers" else real(name, *a))  # as without the extra
    settings = load_settings(overrides=["embedder.kind=sentence-transformers",
                                        f"embedder.model={_torch_only_copy(minilm, tmp_path)}"])
    assert settings.embedder.backend == "onnx"
    with pytest.raises(ConfigError, match=r"holds no model.onnx.*export the model to ONNX "
                                          r"there, or install the torch extra.*backend: auto"):
        open_embedder(settings.embedder)


@pytest.mark.torch
def test_backend_auto_runs_a_model_of_torch_weights_on_torch(minilm: str,
                                                             tmp_path: Path) -> None:
    folder = _torch_only_copy(minilm, tmp_path, rendition="torch")
    settings = load_settings(overrides=["embedder.kind=sentence-transformers",
                                        f"embedder.model={folder}"])
    assert settings.embedder.backend == "torch"
    assert open_embedder(settings.embedder).embed(["a query"]).shape == (1, 384)


def test_a_hashing_embedder_records_the_default_backend_not_auto() -> None:
    assert load_settings().embedder.backend == "onnx"
    with pytest.raises(ConfigError, match=r"embedder.backend"):
        load_settings(overrides=["embedder.backend=cuda"])
