"""The onnx backend: the packaged int8 all-MiniLM-L6-v2 run by ONNX Runtime, with no PyTorch;
its files checked against the digests kept in the code; its vectors agreeing with torch's;
a model folder read the way sentence-transformers reads it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from connectors.embedders.model_location import CACHE_ENV, MINILM, locate_model
from connectors.embedders.onnx_encoder import read_layout
from connectors.embedders.packaged_models import MINILM_CHECKPOINT, PACKAGED
from connectors.embedders.sentence_transformer import SentenceTransformerEmbedder
from core.errors import ConfigError

TEXTS = ["How do I read a JSON document from a string?", "copy a file",
         "Deserialize a str containing a JSON document to a Python object. " * 12,
         "Push an item onto the heap, keeping the heap invariant.", "  padded text  "]


@pytest.mark.slow  # the model, loaded
@pytest.mark.torch
def test_onnx_vectors_agree_with_torchs_and_their_identities_name_one_model(
        minilm: str) -> None:
    onnx = SentenceTransformerEmbedder(minilm, backend="onnx")
    torch = SentenceTransformerEmbedder(minilm, backend="torch")
    cosines = (onnx.embed(TEXTS) * torch.embed(TEXTS)).sum(axis=1)
    assert cosines.min() >= 0.998, cosines
    assert (onnx.info.backend, torch.info.backend) == ("onnx", "torch")
    assert onnx.info.weights != torch.info.weights
    assert onnx.info.checkpoint == torch.info.weights == MINILM_CHECKPOINT
    assert onnx.info.same_as(torch.info) and torch.info.same_as(onnx.info)
    assert onnx.info.model_identity() == torch.info.model_identity()


@pytest.mark.slow  # the model, loaded
def test_the_onnx_backend_imports_no_torch(minilm: str) -> None:
    script = ("import sys\nfrom connectors.embedders.sentence_transformer import "
              "SentenceTransformerEmbedder as E\n"
              f"print(E({minilm!r}, backend='onnx').embed(['a query']).shape)\n"
              "assert 'torch' not in sys.modules, 'torch was imported'\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={**os.environ}, check=False, cwd=Path(__file__).parents[3])
    assert done.returncode == 0, done.stderr[-2000:]
    assert "(1, 384)" in done.stdout


@pytest.mark.slow  # the model, loaded
def test_a_packaged_file_with_another_digest_is_refused_by_name(tmp_path: Path) -> None:
    environ = {CACHE_ENV: str(tmp_path)}
    folder = locate_model(MINILM, environ, backend="onnx")
    assert folder == tmp_path / PACKAGED[(MINILM, "onnx")].folder and folder.name == MINILM
    with open(folder / "model.onnx", "r+b") as weights:
        weights.seek(1000)
        weights.write(b"\x00\x01")
    with pytest.raises(ConfigError, match=r"model.onnx has SHA-256 .* not the packaged 8199be6f"):
        locate_model(MINILM, environ, backend="onnx")
    shutil.rmtree(folder)  # as the message says: put together again
    assert locate_model(MINILM, environ, backend="onnx") == folder


def _model_folder(tmp_path: Path, modules: list[str], pooling: dict[str, bool]) -> Path:
    folder = tmp_path / "model"
    (folder / "1_Pooling").mkdir(parents=True)
    (folder / "modules.json").write_text(json.dumps(
        [{"path": "1_Pooling" if kind == "Pooling" else "",
          "type": f"sentence_transformers.models.{kind}"} for kind in modules]))
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(
        {"word_embedding_dimension": 8, **pooling}))
    (folder / "sentence_bert_config.json").write_text('{"max_seq_length": 32}')
    (folder / "tokenizer.json").write_text("{}")
    (folder / "model.onnx").write_bytes(b"")
    return folder


def test_the_layout_is_what_the_folders_files_say(tmp_path: Path) -> None:
    layout = read_layout(_model_folder(tmp_path, ["Transformer", "Pooling"],
                                       {"pooling_mode_cls_token": True}))
    assert (layout.pooling, layout.dimension, layout.max_seq_length, layout.normalizes) == (
        "cls_token", 8, 32, False)


def test_a_model_with_a_module_the_onnx_backend_cannot_run_is_refused(tmp_path: Path) -> None:
    folder = _model_folder(tmp_path, ["Transformer", "Pooling", "Dense", "Normalize"],
                           {"pooling_mode_mean_tokens": True})
    with pytest.raises(ConfigError, match=r"embedder.backend='onnx'.*'Dense'.*backend: torch"):
        read_layout(folder)


def test_a_folder_without_an_onnx_file_says_so(tmp_path: Path) -> None:
    folder = _model_folder(tmp_path, ["Transformer", "Pooling"],
                           {"pooling_mode_mean_tokens": True})
    (folder / "model.onnx").unlink()
    with pytest.raises(ConfigError, match=r"holds no model.onnx or onnx/model.onnx"):
        read_layout(folder)


@pytest.mark.slow  # the model, loaded
def test_onnx_pooling_matches_sentence_transformers_on_a_batch_of_mixed_lengths(
        minilm: str) -> None:
    onnx = SentenceTransformerEmbedder(minilm, batch_size=2, backend="onnx")
    together = onnx.embed(TEXTS)
    alone = np.vstack([onnx.embed([text]) for text in TEXTS])
    assert np.allclose(together, alone, atol=1e-5)  # padding and length batching change nothing
