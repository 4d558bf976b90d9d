"""A JSON document written whole or not at all: beside its path, then renamed over it."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from pipeline.io.local_paths import is_local


def write_json_file(path: str, document: Mapping[str, object], sort_keys: bool = False) -> None:
    """Writes `document` (indented) beside `path` and renames it into place, so a kill leaves
    the old file or the new one (local paths only)."""
    if not is_local(path):
        return
    staged = f"{path}.tmp-{os.getpid()}"
    Path(staged).write_text(json.dumps(document, indent=1, sort_keys=sort_keys) + "\n",
                            encoding="utf-8")
    os.replace(staged, path)
