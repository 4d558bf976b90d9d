"""`--previous` must be what a finished run left: a file that its run's manifest names, with the
same size and SHA-256. A run killed before its end leaves no manifest, so its snapshot is never
taken for a finished night's."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from core.errors import InvalidInputError
from core.file_digest import file_sha256
from pipeline.io.local_paths import is_local
from pipeline.io.run_io import MANIFEST_SUFFIX

SIBLINGS_READ = 200
"""How many manifests beside PREV are read to find the one that names it."""


def check_finished_run(flag: str, location: str) -> dict[str, Any] | None:
    """Refuses a `--previous` that is not what a finished run left. Its manifest is the one
    beside it (or beside the file a link names); else one of the manifests in its folder that
    names a file of its size (a run's manifest names its snapshot too: a night whose last
    manifest was not written, or a night of an earlier version, which wrote only the results'
    manifest). The file must be that run's snapshot, or the results of a run without
    `--previous`, with the size and SHA-256 recorded. An empty file is the first night: every
    query is then new.

    Raises:
        InvalidInputError: naming `flag`, the file and what is wrong, in one line.
    """
    if not is_local(location) or os.path.getsize(location) == 0:
        return None
    size = os.stat(location).st_size
    path, document = _manifest_naming(flag, location, size)
    chained = "previous" in document
    described = _entry(document, "snapshot" if chained else "results")
    if described.get("bytes") == size and described.get("sha256") == file_sha256(location):
        return document
    if chained and _entry(document, "results").get("bytes") == size:
        raise InvalidInputError(flag, location, "holds only the evidence that changed in its "
                                "run; pass that run's --snapshot")
    raise InvalidInputError(flag, location, f"does not match its manifest {path} (size or "
                            "SHA-256 differ): it was changed, cut or replaced after its run")


def _manifest_naming(flag: str, location: str, size: int) -> tuple[str, dict[str, Any]]:
    real = os.path.realpath(location)
    for path in dict.fromkeys((f"{location}{MANIFEST_SUFFIX}", f"{real}{MANIFEST_SUFFIX}")):
        if os.path.lexists(path):
            return path, _read(flag, path, location)
    siblings = sorted(Path(real).parent.glob(f"*{MANIFEST_SUFFIX}"))[:SIBLINGS_READ]
    for sibling in siblings:
        try:
            document = _read(flag, str(sibling), location)
        except InvalidInputError:
            continue
        if _entry(document, "snapshot").get("bytes") == size:
            return str(sibling), document
    raise InvalidInputError(flag, location, "is not the output of a finished run: no "
                            f"manifest names it ({location}{MANIFEST_SUFFIX}, or one in its "
                            "folder; a run killed before its end leaves none); pass the "
                            "--snapshot of a run that finished, or an empty file to count "
                            "every query as new")


def _read(flag: str, path: str, location: str) -> dict[str, Any]:
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise InvalidInputError(flag, location, f"has a manifest {path} that cannot be "
                                f"read ({error})") from None
    if not isinstance(document, dict):
        raise InvalidInputError(flag, location, f"has a manifest {path} that is no "
                                "run manifest (not a JSON object)")
    return document


def _entry(document: dict[str, Any], name: str) -> dict[str, Any]:
    entry = document.get(name)
    return entry if isinstance(entry, dict) else {}
