"""A sentence-transformers model, run on the CPU by ONNX Runtime (`onnx`, the default: no
PyTorch) or by sentence-transformers on PyTorch (`torch`, any model it loads)."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from connectors.embedder_port import EmbedderInfo, Purpose
from connectors.embedders.fork_safe import fork_safe_tokenizers
from connectors.embedders.model_fingerprint import model_fingerprint
from connectors.embedders.model_location import locate_model, model_cache
from connectors.embedders.onnx_encoder import ONNX_FILES, OnnxEncoder, read_layout
from connectors.embedders.onnx_export import exporter_installed
from connectors.embedders.packaged_models import packaged_model
from core.errors import ConfigError, InvalidInputError

KIND = "sentence-transformers"
BACKENDS = ("onnx", "torch")
DEFAULT_BACKEND = "onnx"
AUTO = "auto"
"""`embedder.backend: auto`, the default: chosen per model by `auto_backend`."""
_LIBRARIES = {"onnx": ("onnxruntime", "tokenizers"), "torch": ("sentence_transformers",)}
INSTALL_HINTS = {
    "onnx": "install the semantic extra: pip install 'rag-evidence[semantic]'",
    "torch": "install the torch extra: pip install 'rag-evidence[torch]' (torch==2.13.0; "
             "docs/embedders.md says how to get its CPU-only build), or use "
             "embedder.backend: onnx"}


def unavailable(model: str, backend: str = DEFAULT_BACKEND,
                environ: Mapping[str, str] | None = None) -> str | None:
    """Why model `model` cannot run on `backend` here (its libraries are not installed, or the
    model is nowhere), or None when it can."""
    if not _installed(backend):
        return INSTALL_HINTS[backend]
    try:
        locate_model(model, environ, backend)
    except ConfigError as error:
        return str(error)
    return None


def auto_backend(model: str, environ: Mapping[str, str] | None = None) -> str:
    """The backend `embedder.backend: auto` runs `model` on: `onnx` when its files hold ONNX
    weights (the packaged model's onnx rendition does) and ONNX Runtime is installed; `torch`
    when they hold only torch weights, or ONNX Runtime is missing, and the torch extra is
    installed; else `onnx`, whose load then names both ways out."""
    packaged = packaged_model(model, "onnx")
    if packaged is not None:  # a rendition exported here needs the exporter, or a past export
        has_onnx = packaged.exported_from is None or exporter_installed() or _exported(
            packaged.folder, environ)
    else:
        try:
            directory = locate_model(model, environ, "onnx")
        except ConfigError:
            return DEFAULT_BACKEND  # nowhere: the load says where it looked
        has_onnx = any((directory / name).is_file() for name in ONNX_FILES)
    if has_onnx and _installed("onnx"):
        return "onnx"
    return "torch" if _installed("torch") else DEFAULT_BACKEND


def _exported(folder: str, environ: Mapping[str, str] | None) -> bool:
    try:
        return (model_cache(environ) / folder).is_dir()
    except ConfigError:
        return False


def _installed(backend: str) -> bool:
    return all(importlib.util.find_spec(name) is not None for name in _LIBRARIES[backend])


def model_info(model: str, dimension: int, query_prefix: str = "", document_prefix: str = "",
               normalize: bool = True, directory: Path | None = None,
               backend: str = DEFAULT_BACKEND) -> EmbedderInfo:
    """What a store records of model `model` run by `backend` (found in `directory`, by
    default where `locate_model` finds it) with these prefixes: its name, its files'
    fingerprint, the backend, and the model they are a rendition of when it is another."""
    directory = directory or locate_model(model, backend=backend)
    weights = model_fingerprint(directory)
    packaged = packaged_model(model, backend)
    checkpoint = (packaged.checkpoint if packaged and directory.as_posix().endswith(
        packaged.folder) else None)
    return EmbedderInfo(KIND, Path(model).name, dimension, query_prefix, document_prefix,
                        normalize, weights, backend, checkpoint)


def model_dimension(model: str, environ: Mapping[str, str] | None = None,
                    backend: str = DEFAULT_BACKEND) -> int | None:
    """The dimension of model `model`'s vectors, read from its files without loading it: the
    last Dense module's `out_features`, else the pooling's word dimension; None when the files
    do not say (the model must be loaded to know).

    Raises:
        ConfigError: the model is nowhere on this machine; on `onnx`, its files are not a
            model that backend runs (see `read_layout`).
    """
    directory = locate_model(model, environ, backend)
    if backend == "onnx":  # what the backend runs, its files' values checked
        return read_layout(directory).dimension
    dimension: int | None = None
    try:
        modules = json.loads((directory / "modules.json").read_text(encoding="utf-8"))
        for module in modules:
            config = directory / module.get("path", "") / "config.json"
            kind = str(module.get("type", ""))
            if kind.endswith((".Pooling", ".Dense")) and config.is_file():
                data = json.loads(config.read_text(encoding="utf-8"))
                dimension = int(data.get("out_features") or data["word_embedding_dimension"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return dimension


class SentenceTransformerEmbedder:
    """Embeds with a local sentence-transformers model run by `backend`, `batch_size` texts
    per forward pass.

    Loading takes seconds: build one per worker process and share it (the pipeline's Embed
    step does, through Beam's `Shared`).

    Usage::

        embedder = SentenceTransformerEmbedder("all-MiniLM-L6-v2")
        embedder.embed(["how do I parse json?"]).shape
    (1, 384)
    """

    def __init__(self, model: str, *, batch_size: int = 64, query_prefix: str = "",
                 document_prefix: str = "", normalize: bool = True,
                 expected_dimension: int | None = None,
                 environ: Mapping[str, str] | None = None,
                 backend: str = DEFAULT_BACKEND) -> None:
        if backend not in BACKENDS:
            raise ConfigError("embedder.backend", backend, f"must be one of {list(BACKENDS)}")
        directory = locate_model(model, environ, backend)
        if backend == "onnx":
            self._onnx: OnnxEncoder | None = _load_onnx(directory, batch_size)
            dimension = self._onnx.layout.dimension
        else:
            self._onnx, self._model = None, _load(directory)
            dimension = int(self._model.get_embedding_dimension())
        if expected_dimension is not None and expected_dimension != dimension:
            raise ConfigError("embedder.dim", expected_dimension,
                              f"the model {model!r} makes vectors of {dimension} dimensions; "
                              "remove embedder.dim or set it to that")
        self._info = model_info(model, dimension, query_prefix, document_prefix, normalize,
                                directory, backend)
        self._batch_size = batch_size

    @property
    def dimension(self) -> int:
        return self._info.dimension

    @property
    def info(self) -> EmbedderInfo:
        return self._info

    def embed(self, texts: Sequence[str], purpose: Purpose = "query") -> np.ndarray:
        for text in texts:
            if not text.strip():
                raise InvalidInputError("text", text, "is blank; there is nothing to embed")
        prefix = self._info.query_prefix if purpose == "query" else self._info.document_prefix
        if self._onnx is not None:
            return self._onnx.encode([prefix + text for text in texts], self._info.normalize)
        vectors = self._model.encode(
            [prefix + text for text in texts], batch_size=self._batch_size,
            normalize_embeddings=self._info.normalize, convert_to_numpy=True,
            show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), self.dimension)


def _load_onnx(directory: Path, batch_size: int) -> OnnxEncoder:
    layout = read_layout(directory)
    try:
        return OnnxEncoder(layout, batch_size=batch_size)
    except ImportError as error:
        raise ConfigError("embedder.backend", "onnx",
                          f"{INSTALL_HINTS['onnx']} ({error})") from None


def _load(directory: Path) -> Any:
    fork_safe_tokenizers()
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as error:
        raise ConfigError("embedder.backend", "torch",
                          f"{INSTALL_HINTS['torch']} ({error})") from None
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    return SentenceTransformer(str(directory), device="cpu", local_files_only=True)
