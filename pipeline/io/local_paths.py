"""Checks of the files a job names, made before anything starts, so that no run loses results
to a path mistake: an output over an input or over another output, a folder, a pipe, a folder
that cannot be written, an input that is not UTF-8. Paths with a scheme (`gs://...`) are left
to their filesystem."""

from __future__ import annotations

import os
import stat
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from core.errors import InvalidInputError

_PEEK_BYTES = 64 * 1024
_UTF16_32_MARKS = (b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")


def is_local(path: str) -> bool:
    return "://" not in path


def check_input_file(flag: str, path: str, *, text: bool = True) -> None:
    """`path` exists and is a regular file (a pipe would be read up once and lost: the job
    reads its input more than once); with `text`, its start does not look like UTF-16/32.

    Raises:
        InvalidInputError: naming `flag`, the path and what it is instead.
    """
    if not is_local(path):
        if not FileSystems.exists(path):
            raise InvalidInputError(flag, path, "does not exist")
        return
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise InvalidInputError(flag, path, "does not exist") from None
    except OSError as error:
        raise InvalidInputError(flag, path, f"cannot be read ({error.strerror})") from None
    if stat.S_ISDIR(mode):
        raise InvalidInputError(flag, path, "is a folder, not a file")
    if not stat.S_ISREG(mode):
        raise InvalidInputError(flag, path, "is not a regular file (a pipe or a device): the "
                                "job reads its input more than once, so save it to a file "
                                "first (for example `zcat q.jsonl.gz > q.jsonl`)")
    if text and not path.lower().endswith((".gz", ".bz2", ".xz", ".zst", ".deflate")):
        with open(path, "rb") as handle:
            start = handle.read(_PEEK_BYTES)
        if start.startswith(_UTF16_32_MARKS) or start.count(0) * 4 >= max(len(start), 8):
            raise InvalidInputError(flag, path, "is not UTF-8 text (it starts with a UTF-16/32 "
                                    "byte-order mark, or a quarter of it is NUL bytes); "
                                    "convert it to UTF-8")


def check_output_file(flag: str, path: str) -> None:
    """`path` can be written: not named as a compressed file (a reader would take it for one),
    not a folder, in a folder that exists and is writable.

    Raises:
        InvalidInputError: naming `flag`, the path and what is wrong.
    """
    if CompressionTypes.detect_compression_type(path) != CompressionTypes.UNCOMPRESSED:
        raise InvalidInputError(flag, path, "is named as a compressed file, but what rag-evidence "
                                "writes is never compressed; name it .jsonl or .parquet (and "
                                "compress it afterwards if you must)")
    if not is_local(path):
        return
    target = Path(path)
    if target.is_dir():
        raise InvalidInputError(flag, path, "is a folder; name a file to write")
    folder = target.parent
    if not folder.is_dir():
        raise InvalidInputError(flag, path, f"cannot be written: the folder {str(folder)!r} "
                                "does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InvalidInputError(flag, path, f"cannot be written: the folder {str(folder)!r} "
                                "is not writable")


def check_job_files(inputs: Iterable[tuple[str, str | None]],
                    outputs: Iterable[tuple[str, str | None]], *,
                    derived: Iterable[tuple[str, str | None]] = (),
                    binary: Collection[str] = (),
                    input_folders: Mapping[str, str | None] | None = None) -> None:
    """The one guard of a command's files, run before any work: each input (flag, path) is a
    readable regular file, UTF-8 text unless its path is in `binary`; each output can be
    written; no two of the inputs, outputs and `derived` outputs (a manifest, a list of gone
    ids: files a command writes beside the ones it is given) are one file, links resolved; and
    no output lies inside an input folder (`input_folders`, such as `--docs`). Absent (None)
    paths are skipped; a flag may repeat (`--compare A B`).

    Raises:
        InvalidInputError: naming the flag, the path and what is wrong.
    """
    inputs, outputs, derived = list(inputs), list(outputs), list(derived)
    for flag, path in inputs:
        if path is not None:
            check_input_file(flag, path, text=path not in binary)
    for flag, path in outputs:
        if path is not None:
            check_output_file(flag, path)
    check_distinct([*inputs, *outputs, *derived])
    for folder_flag, folder in (input_folders or {}).items():
        check_outside(folder_flag, folder, [*outputs, *derived])


def check_distinct(paths: Iterable[tuple[str, str | None]]) -> None:
    """No two of the named files (flag, path) are one file (an output over an input, or over
    another output, would end holding only part of the job's records).

    Raises:
        InvalidInputError: naming both flags and the path.
    """
    seen: dict[str, str] = {}
    for flag, path in paths:
        if path is None or not is_local(path):
            continue
        real = os.path.realpath(path)
        if real in seen:
            raise InvalidInputError(flag, path, f"is the same file as {seen[real]}; each must "
                                    "be a file of its own")
        seen[real] = flag


def check_outside(folder_flag: str, folder: str | None,
                  outputs: Iterable[tuple[str, str | None]]) -> None:
    """No output is inside the input folder `folder` (a `--failures` or `--summary` written
    into `--docs` would be read as a document by the next job), links resolved.

    Raises:
        InvalidInputError: naming the output's flag and path, and the folder's flag.
    """
    if folder is None:
        return
    root = Path(os.path.realpath(folder))
    for flag, path in outputs:
        if path is not None and is_local(path) and Path(os.path.realpath(path)
                                                        ).is_relative_to(root):
            raise InvalidInputError(flag, path, f"is inside {folder_flag} {folder!r}: the "
                                    "next index would read it as input; write it elsewhere")
