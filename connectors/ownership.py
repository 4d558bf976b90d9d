"""Who owns a path now: lock files, and work folders named after the process that made them.

Both carry their owner's host and process id, so that a later job on the same host can tell a
live owner (refused, named) from a killed one (whose lock is taken over and whose work
folders are removed, never read as data).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

from connectors.errors import RagEvidenceError

_OWNED = re.compile(r"(?P<host>.+)-(?P<pid>\d+)-[0-9a-f]{8}$")


class BusyError(RagEvidenceError):
    """Another live job holds the path."""


def owned_suffix() -> str:
    """`HOST-PID-RANDOM`: a work folder's suffix that names this process."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def remove_stale(folder: Path, prefix: str) -> list[Path]:
    """Removes the work folders `folder/prefix*` whose owner was a process of this host that
    is gone; returns what it removed."""
    removed = []
    for entry in folder.glob(f"{prefix}*") if folder.is_dir() else ():
        owner = _OWNED.match(entry.name[len(prefix):])
        if owner and _gone(owner["host"], int(owner["pid"])):
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


@contextlib.contextmanager
def held(lock: Path, what: str) -> Iterator[None]:
    """Holds `lock` (a file beside what it guards) while the block runs.

    Raises:
        BusyError: a live process holds it, named by host and pid.
    """
    take(lock, what)
    try:
        yield
    finally:
        release(lock)


def release(lock: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        lock.unlink()


def take(lock: Path, what: str) -> None:
    """Takes `lock` for this process (see `held`)."""
    for _ in range(2):
        try:
            descriptor = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            host, pid = _holder(lock)
            if not _gone(host, pid):
                raise BusyError(f"{what} is in use by process {pid} on {host} (lock {lock}); "
                                "wait for it to end, or remove the lock if that process is "
                                "gone") from None
            with contextlib.suppress(FileNotFoundError):
                lock.unlink()  # its owner was killed
            continue
        with os.fdopen(descriptor, "w") as handle:
            handle.write(f"{socket.gethostname()} {os.getpid()}\n")
        return
    raise BusyError(f"{what}: the lock {lock} keeps coming back; another job is starting")


def _holder(lock: Path) -> tuple[str, int]:
    try:
        host, pid = lock.read_text(encoding="utf-8").split()
        return host, int(pid)
    except (OSError, ValueError):
        return socket.gethostname(), -1  # half-written or unreadable: as if gone


def _gone(host: str, pid: int) -> bool:
    """Whether process `pid` of `host` has ended (a process of another host never is)."""
    if host != socket.gethostname():
        return False
    if pid <= 0:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False
