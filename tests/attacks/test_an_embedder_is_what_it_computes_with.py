"""An embedder is what it computes with: two model folders of one name holding other files are
two embedders, to `index` and to `run`; one model copied to another folder is the same one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from connectors.embedders.model_fingerprint import model_fingerprint
from connectors.embedders.model_location import locate_model
from core.errors import EmbedderChangedError
from pipeline.cli.main import main
from pipeline.config.loader import load_settings
from pipeline.ingest.job import run_index

pytestmark = pytest.mark.slow  # the model, copied and loaded


@pytest.fixture(scope="module")
def two_encoders(minilm: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """/m/a/encoder and /m/b/encoder: MiniLM, and MiniLM with one setting of its config (the
    longest input it reads)."""
    root = tmp_path_factory.mktemp("m")
    a, b = root / "a" / "encoder", root / "b" / "encoder"
    shutil.copytree(locate_model(minilm), a)
    shutil.copytree(a, b)
    config = json.loads((b / "sentence_bert_config.json").read_text())
    (b / "sentence_bert_config.json").write_text(json.dumps({**config, "max_seq_length": 128}))
    return a, b


def _settings(store: Path, model: Path) -> list[str]:
    return [f"search.embedded.path={store}", "embedder.kind=sentence-transformers",
            f"embedder.model={model}"]


def test_a_copy_of_a_model_has_its_fingerprint_and_another_setting_does_not(
        two_encoders: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = two_encoders
    (tmp_path / "README.md").write_text("a description changes nothing")
    copy = tmp_path / "copy"
    shutil.copytree(a, copy)
    (copy / "README.md").write_text("another description")
    assert model_fingerprint(copy) == model_fingerprint(a) != model_fingerprint(b)


def test_index_refuses_a_same_named_model_of_other_files(
        two_encoders: tuple[Path, Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    a, b = two_encoders
    docs, store = tmp_path / "docs", tmp_path / "store"
    docs.mkdir()
    (docs / "d.md").write_text("Parse a JSON document into a dictionary.")
    run_index(load_settings(overrides=_settings(store, a)), docs=str(docs))
    with pytest.raises(EmbedderChangedError,
                       match=r"encoder \(384 dims, backend onnx, weights [0-9a-f]+\)"):
        run_index(load_settings(overrides=_settings(store, b)), docs=str(docs))
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": "q1", "text": "json"}\n')
    code = main(["run", *[x for s in _settings(store, b) for x in ("--set", s)],
                 "--queries", str(queries), "--out", str(tmp_path / "out.jsonl")])
    assert code == 2 and "encoder" in capsys.readouterr().err
