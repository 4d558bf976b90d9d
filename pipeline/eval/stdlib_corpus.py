"""A corpus every Python install has: the standard library's module documentation."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path
from types import ModuleType

from pipeline.io.owned_folders import check_owned_folder, claim_folder

MODULES = (
    "json", "csv", "re", "pathlib", "os.path", "shutil", "subprocess", "itertools", "functools",
    "collections", "datetime", "logging", "argparse", "sqlite3", "threading", "heapq", "bisect",
    "tempfile", "zipfile", "hashlib", "random", "statistics", "textwrap", "string", "glob",
    "urllib.parse", "base64", "copy", "pickle", "unittest", "dataclasses", "enum", "typing",
    "contextlib", "time", "uuid", "gzip", "tarfile", "difflib", "pprint",
)


def module_markdown(name: str) -> str:
    """The module docstring, then each public function's and class's first paragraphs."""
    module = importlib.import_module(name)
    parts = [f"# {name}", inspect.getdoc(module) or ""]
    for member_name, member in sorted(vars(module).items()):
        if not _is_public(module, member_name, member):
            continue
        if inspect.isroutine(member) or inspect.isclass(member):
            doc = inspect.getdoc(member)
            if doc:
                parts.append(f"## {name}.{member_name}\n\n{doc.split(chr(10) * 2)[0]}")
    return "\n\n".join(p for p in parts if p)


def _is_public(module: ModuleType, name: str, member: object) -> bool:
    """Listed in `__all__`, or else defined in the module or its C accelerator (`_bisect`)."""
    listed = getattr(module, "__all__", None)
    if listed is not None:
        return name in listed
    home = getattr(member, "__module__", None)
    return not name.startswith("_") and home in (module.__name__, f"_{module.__name__}")


CORPUS_MARKER = ".rag-evidence-corpus"
"""The file that marks a folder as a corpus this command wrote (and may write again)."""


def check_corpus_folder(folder: str, flag: str = "corpus OUT") -> None:
    """Refuses, before writing, a folder that holds anything but a corpus written here (a
    user's `json.md` would be overwritten), a file, or a folder that cannot be made.

    Raises:
        InvalidInputError: naming the folder and what is in it.
    """
    check_owned_folder(flag, folder, CORPUS_MARKER, [f"{name}.md" for name in MODULES])


def write_corpus(folder: Path) -> int:
    """Writes one Markdown file per module under `folder` (checked by `check_corpus_folder`);
    returns how many it wrote."""
    claim_folder(folder, CORPUS_MARKER)
    written = 0
    for name in MODULES:
        try:
            text = module_markdown(name)
        except ImportError:
            continue
        (folder / f"{name}.md").write_text(text, encoding="utf-8")
        written += 1
    return written
