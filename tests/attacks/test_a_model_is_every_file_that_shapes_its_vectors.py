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


@pytest.mark.slow  # the model embeds two nights of documents and queries
def test_a_rebuilt_store_of_a_changed_model_is_never_continued_from_the_old_state(
        cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The reported case: pooling changed (mean to CLS), `index --rebuild` as the error says,
    then `run --previous`: every query is answered in full with the new model, not continued
    with last night's query vectors."""
    model = tmp_path / "my-encoder"
    shutil.copytree(_packaged(cache), model)
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in (("json.md", "Parse a JSON document into a dictionary."),
                       ("csv.md", "Read rows of a CSV file with a reader."),
                       ("re.md", "Match text against a regular expression.")):
        (docs / name).write_text(f"# {name}\n\n{text}")
    config = tmp_path / "config.yaml"
    config.write_text(f"search:\n  embedded:\n    path: {tmp_path / 'store'}\n"
                      f"embedder:\n  kind: sentence-transformers\n  model: {model}\n")
    queries = tmp_path / "q.jsonl"
    queries.write_text("".join(json.dumps({"id": f"q{i}", "text": t}) + "\n" for i, t in
                               enumerate(["parse json", "read a csv file", "regex match"])))
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")

    def night(name: str, previous: Path) -> Path:
        snapshot = tmp_path / name / "all.jsonl"
        snapshot.parent.mkdir()
        assert main(["run", "--config", str(config), "--queries", str(queries), "--out",
                     str(tmp_path / name / "changed.jsonl"), "--previous", str(previous),
                     "--snapshot", str(snapshot), "--summary",
                     str(tmp_path / name / "run.json")]) == 0
        return snapshot

    assert main(["index", "--config", str(config), "--docs", str(docs)]) == 0
    first = night("n1", empty)
    _cls_pooling(model)
    assert main(["index", "--config", str(config), "--docs", str(docs)]) == 2  # refused
    assert main(["index", "--config", str(config), "--docs", str(docs), "--rebuild"]) == 0
    second = night("n2", first)
    counts = json.loads((tmp_path / "n2" / "run.json").read_text())["counts"]
    assert counts["queries_continued"] == 0 and counts["full_not_continuable"] == 3
    manifest = json.loads(Path(f"{second}.manifest.json").read_text())
    assert "settings differ" in manifest["continuation"]["answered_in_full"]
    full = tmp_path / "full.jsonl"
    assert main(["run", "--config", str(config), "--queries", str(queries), "--out",
                 str(full)]) == 0
    by_id = {r["query_id"]: r["evidence"] for r in map(json.loads, second.read_text().splitlines())}
    assert by_id == {r["query_id"]: r["evidence"]
                     for r in map(json.loads, full.read_text().splitlines())}


@pytest.mark.torch  # the torch rendition comes from the torch extra's package
def test_a_changed_pooling_in_the_packaged_torch_cache_is_refused(tmp_path: Path) -> None:
    """The torch rendition is the model's own folder, extracted from a package's zip: every
    file of it is checked against the zip, not only the weights and the tokenizer."""
    cache = tmp_path / "models"
    folder = locate_model(MINILM, {CACHE_ENV: str(cache)}, backend="torch")
    assert locate_model(MINILM, {CACHE_ENV: str(cache)}, backend="torch") == folder
    _cls_pooling(folder)
    with pytest.raises(ConfigError, match="is not the packaged model's 1_Pooling/config.json"):
        locate_model(MINILM, {CACHE_ENV: str(cache)}, backend="torch")
