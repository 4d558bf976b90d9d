"""A model is every file that shapes its vectors (pooling, normalization, maximum length,
lower-casing, tokenizer), in the packaged cache and in a user's folder alike: a changed one
is refused or is another embedder, never continued from a state of the old one; a value of
the wrong type in a model's file, or a model cache that is no folder, is one line, exit 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from connectors.embedders.model_location import CACHE_ENV, MINILM, locate_model
from core.errors import ConfigError
from pipeline.cli.main import main
from pipeline.config.loader import load_settings
from pipeline.run.state_files import settings_fingerprint

POOLING = "1_Pooling/config.json"


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    """A model cache of this test, holding the packaged ONNX MiniLM put together."""
    folder = tmp_path / "models"
    locate_model(MINILM, {CACHE_ENV: str(folder)})
    return folder


def _packaged(cache: Path) -> Path:
    return cache / "onnx-int8" / MINILM


def _cls_pooling(model: Path) -> None:
    config = json.loads((model / POOLING).read_text())
    (model / POOLING).write_text(json.dumps({**config, "pooling_mode_cls_token": True,
                                             "pooling_mode_mean_tokens": False}))


def test_a_changed_pooling_in_the_packaged_cache_is_refused(cache: Path) -> None:
    _cls_pooling(_packaged(cache))
    with pytest.raises(ConfigError, match="is not the packaged model's 1_Pooling/config.json"):
        locate_model(MINILM, {CACHE_ENV: str(cache)})


def test_a_user_folder_whose_pooling_changed_is_another_embedder_to_the_state(
        cache: Path, tmp_path: Path) -> None:
    model = tmp_path / "my-encoder"
    shutil.copytree(_packaged(cache), model)
    overrides = ["embedder.kind=sentence-transformers", f"embedder.model={model}"]
    before = settings_fingerprint(load_settings(overrides=overrides))
    _cls_pooling(model)
    assert settings_fingerprint(load_settings(overrides=overrides)) != before


@pytest.mark.parametrize(("file", "key", "value"), [
    ("sentence_bert_config.json", "max_seq_length", "abc"),
    ("sentence_bert_config.json", "max_seq_length", -3),
    ("sentence_bert_config.json", "do_lower_case", "yes"),
    (POOLING, "word_embedding_dimension", 0),
    (POOLING, "pooling_mode_mean_tokens", "true"),
])
def test_a_wrong_value_in_a_model_file_is_one_line_before_the_run(
        cache: Path, store_config: Path, tmp_path: Path, file: str, key: str, value: object,
        capsys: pytest.CaptureFixture[str]) -> None:
    model = tmp_path / "my-encoder"
    shutil.copytree(_packaged(cache), model)
    config = json.loads((model / file).read_text())
    (model / file).write_text(json.dumps({**config, key: value}))
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": "q", "text": "parse json"}) + "\n")
    out = tmp_path / "out.jsonl"
    assert main(["run", "--config", str(store_config), "--set",
                 "embedder.kind=sentence-transformers", "--set", f"embedder.model={model}",
                 "--queries", str(queries), "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert f"{Path(file).name}: {key}={value!r}" in error and "Traceback" not in error
    assert not out.exists()


def test_a_model_cache_that_is_a_file_is_one_line(
        store_config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    a_file = tmp_path / "cache"
    a_file.write_text("not a folder")
    monkeypatch.setenv(CACHE_ENV, str(a_file))
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": "q", "text": "parse json"}) + "\n")
    assert main(["run", "--config", str(store_config), "--set",
                 "embedder.kind=sentence-transformers", "--set", f"embedder.model={MINILM}",
                 "--queries", str(queries), "--out", str(tmp_path / "out.jsonl")]) == 2
    assert f"{CACHE_ENV}" in capsys.readouterr().err
    assert a_file.read_text() == "not a folder"
