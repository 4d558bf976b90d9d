"""A file written whole or not at all: beside its path, then renamed over it."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from pipeline.io.local_paths import is_local

STAGED = ".tmp-"
"""Between a file's name and the writer's process id: where it is written before its rename."""


def staged_path(path: str) -> str:
    """Where this process writes `path` before renaming it into place."""
    return f"{path}{STAGED}{os.getpid()}"


def write_json_file(path: str, document: Mapping[str, object] | Sequence[object],
                    sort_keys: bool = False) -> None:
    """Writes `document` as indented JSON, whole or not at all (see `write_text_file`)."""
    write_text_file(path, json.dumps(document, indent=1, sort_keys=sort_keys) + "\n")


def write_text_file(path: str, text: str) -> None:
    """Writes `text` (UTF-8) beside `path` and renames it into place, so a kill or a full
    disk leaves the old file or the new one, never a part (local paths only)."""
    if not is_local(path):
        return
    staged = staged_path(path)
    try:
        Path(staged).write_text(text, encoding="utf-8")
        os.replace(staged, path)
    finally:
        Path(staged).unlink(missing_ok=True)
