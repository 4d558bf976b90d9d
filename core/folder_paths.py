"""What a path that names a folder may be: the folder, or a path that can be made into one."""

from __future__ import annotations

import os
from pathlib import Path


def folder_path_problem(path: str | Path) -> str | None:
    """Why `path` can be neither used nor made as a folder (links resolved), or None: it is a
    folder; or it does not exist, is no dangling link, and its nearest existing parent is a
    folder."""
    target = Path(path)
    if target.is_dir():
        return None
    if target.exists():
        return "is a file, not a folder"
    if target.is_symlink():
        return "is a link to nothing"
    for parent in target.parents:
        if os.path.lexists(parent):
            return None if parent.is_dir() else f"cannot be made: {str(parent)!r} is a file"
    return None
