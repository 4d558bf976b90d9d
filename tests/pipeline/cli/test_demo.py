"""The demo says which embedder it used and shows what each chunk is about."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.cli.demo import chunk_headings, demo_settings
from pipeline.cli.demo_report import headline
from pipeline.cli.main import main

pytestmark = pytest.mark.slow  # the demo: the model over the stdlib corpus


def test_the_first_sentence_does_not_end_at_an_abbreviation() -> None:
    assert headline("The shelve module, a.k.a. a persistent dict. More.", heading="shelve") == (
        "shelve: The shelve module, a.k.a. a persistent dict.")
    assert headline("Use e.g. json or i.e. text. More.") == "Use e.g. json or i.e. text."


def test_the_headline_is_the_heading_and_the_first_sentence() -> None:
    content = "## json.loads\n\nDeserialize ``s`` to a Python object. Uses the decoder.\n\nMore."
    assert headline(content) == "json.loads: Deserialize ``s`` to a Python object."


def test_a_chunk_under_a_heading_shows_that_heading_and_its_first_sentence() -> None:
    assert headline("quotes that are escaped. More text.", heading="csv.Dialect") == (
        "csv.Dialect: quotes that are escaped.")


def test_the_demo_reads_each_chunks_heading_from_the_store(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "csv.md").write_text("# csv\n\nRead rows.\n\n## csv.Dialect\n\n" + "Quote. " * 30)
    assert main(["index", "--docs", str(docs), "--set", f"search.embedded.path={tmp_path}/s",
                 "--set", "chunking.max-chars=100"]) == 0
    headings = chunk_headings(tmp_path / "s")
    assert headings["csv.md#chunk-0"] == "csv"
    assert set(headings.values()) == {"csv", "csv.Dialect"}


def test_a_chunk_without_a_heading_shows_its_first_sentence_cut_to_the_limit() -> None:
    assert headline("Return the index where to insert item x. Then more.") == (
        "Return the index where to insert item x.")
    assert headline("word " * 40, limit=20) == "word word word wo..."


def test_the_demo_uses_the_semantic_model_when_it_is_installed(minilm: str,
                                                               tmp_path: Path) -> None:
    settings, line = demo_settings(None, {}, [], tmp_path / "store")
    assert settings.embedder.kind == "sentence-transformers"
    assert line == f"embedder: sentence-transformers {minilm} on onnx (semantic)"


def test_a_configured_embedder_wins_over_the_demos_choice(minilm: str, tmp_path: Path) -> None:
    settings, line = demo_settings(None, {}, ["embedder.kind=hashing"], tmp_path / "store")
    assert settings.embedder.kind == "hashing" and "as configured" in line


def test_without_the_model_the_demo_falls_back_to_hashing_and_says_why(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("pipeline.cli.demo.semantic_unavailable", lambda: "no model here")
    settings, line = demo_settings(None, {}, [], tmp_path / "store")
    assert settings.embedder.kind == "hashing"
    assert line == "embedder: hashing (lexical fallback: no model here)"
