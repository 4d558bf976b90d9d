"""Chunks end at natural boundaries (headings, paragraphs, lines, sentences), never pass the
size, may overlap, and carry the heading they fall under."""

from __future__ import annotations

import itertools

import pytest

from core.errors import ConfigError
from pipeline.config.loader import load_settings
from pipeline.ingest.chunking import chunk_text

SENTENCES = " ".join(f"Sentence number {i} says one thing about the module." for i in range(12))


def test_paragraphs_that_fit_stay_whole_and_none_passes_the_size() -> None:
    text = "First paragraph about files.\n\nSecond paragraph about folders.\n\n" + SENTENCES
    chunks = chunk_text(text, 120)
    assert chunks[0].text == "First paragraph about files.\n\nSecond paragraph about folders."
    assert all(len(c.text) <= 120 for c in chunks)


def test_a_long_paragraph_is_split_between_sentences_not_inside_one() -> None:
    chunks = chunk_text(SENTENCES, 160)
    assert len(chunks) > 1
    for chunk in chunks:
        assert chunk.text.startswith("Sentence number") and chunk.text.endswith("module.")


def test_each_chunk_carries_the_heading_it_starts_under() -> None:
    text = ("Preamble without a heading, long enough to fill most of a chunk by itself.\n\n"
            "# json\n\nParse JSON text.\n\n## json.loads\n\n" + SENTENCES
            + "\n\nA title\n=======\n\nUnderlined, as rst writes.")
    chunks = chunk_text(text, 100)
    assert chunks[0].heading is None and chunks[0].text.startswith("Preamble")
    assert chunks[1].text.startswith("# json") and chunks[1].heading == "json"
    assert {c.heading for c in chunks if c.text.startswith("Sentence")} == {"json.loads"}
    assert chunks[-1].heading == "A title"


def test_a_chunk_breaks_before_a_heading_rather_than_after_it() -> None:
    text = "# one\n\n" + SENTENCES[:150] + "\n\n# two\n\n" + SENTENCES[:150]
    chunks = chunk_text(text, 200)
    assert [c.text.split("\n")[0] for c in chunks] == ["# one", "# two"]
    assert [c.heading for c in chunks] == ["one", "two"]


def test_consecutive_chunks_share_the_overlap() -> None:
    chunks = chunk_text(SENTENCES, 160, overlap=60)
    for first, second in itertools.pairwise(chunks):
        assert second.text[:20] in first.text


def test_a_word_longer_than_a_chunk_is_cut_inside() -> None:
    chunks = chunk_text("x" * 130, 50)
    assert [len(c.text) for c in chunks] == [50, 50, 30]


def test_an_overlap_as_long_as_a_chunk_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="chunking.overlap=800 must be less than "
                                          "chunking.max-chars=800"):
        load_settings(overrides=["chunking.overlap=800"])
