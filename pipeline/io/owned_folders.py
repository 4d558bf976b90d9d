"""Folders a command fills and fills again (a snapshot's state, the demo's work folder, a
corpus): it writes into one only when the folder is absent, empty or provably its own, and it
removes only the files it names. A folder with anything else in it (a user's queries, notes,
a config) is refused before any work, and is never emptied."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Collection
from pathlib import Path

from core.errors import InvalidInputError
from core.folder_paths import folder_path_problem
from pipeline.io.json_file import STAGED
from pipeline.io.single_file_sink import PARTS


def _leftover(name: str, names: Collection[str]) -> bool:
    """A killed writer's leftover of one of `names`, as the writers name them: `NAME.tmp-PID`
    (`json_file.staged_path`), `NAME.parts-OWNER` (the single-file sink's part folder), or a
    hidden `.NAME.` + anything beside it (a lock, `connectors.ownership.lock_of`; the embedded
    store's staging and building folders)."""
    return any(re.fullmatch(rf"{re.escape(n)}({re.escape(STAGED)}\d+|{re.escape(PARTS)}.+)"
                            rf"|\.{re.escape(n)}\..+", name) for n in names)


def foreign_entries(folder: Path, marker: str, names: Collection[str]) -> list[str]:
    """The entries of `folder` that are not the command's: everything, when the folder is not
    empty and holds no `marker`; else what is neither the marker, one of `names`, nor a
    leftover of one."""
    entries = sorted(os.listdir(folder))
    if entries and marker not in entries:
        return entries
    ours = {marker, *names}
    return [e for e in entries if e not in ours and not _leftover(e, ours)]


def check_owned_folder(flag: str, path: str, marker: str, names: Collection[str]) -> None:
    """`path` can be filled by the command: absent (its parent a writable folder), or a
    folder (links resolved) that is empty or holds `marker` and only `names`.

    Raises:
        InvalidInputError: naming `flag`, the path, and what is in the way.
    """
    folder = Path(path)
    problem = folder_path_problem(folder)
    if problem:
        raise InvalidInputError(flag, path, f"{problem}; move it or name another folder")
    if not folder.exists():
        parent = next(p for p in folder.absolute().parents if p.exists())  # a folder, as checked
        if not os.access(parent, os.W_OK | os.X_OK):
            raise InvalidInputError(flag, path, f"cannot be made: {str(parent)!r} is not a "
                                    "writable folder")
        return
    if not os.access(folder, os.R_OK | os.W_OK | os.X_OK):
        raise InvalidInputError(flag, path, "is a folder that cannot be read and written")
    foreign = foreign_entries(folder, marker, names)
    if foreign:
        shown = ", ".join(foreign[:5]) + (", ..." if len(foreign) > 5 else "")
        raise InvalidInputError(flag, path, f"holds files that rag-evidence did not write "
                                f"({shown}); it never writes into or empties such a folder: "
                                "move them, or name an empty or new folder")


def claim_folder(path: Path, marker: str, remove: Collection[str] = ()) -> None:
    """Makes `path` the command's (see `check_owned_folder`, which must have passed): creates
    it with its `marker`, and removes the entries of `remove` and the leftovers of the marker
    and of `remove` from an earlier run, nothing else."""
    path.mkdir(parents=True, exist_ok=True)
    for entry in os.listdir(path):
        if entry in remove or _leftover(entry, [marker, *remove]):
            target = path / entry
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            else:
                target.unlink()
    (path / marker).touch()
