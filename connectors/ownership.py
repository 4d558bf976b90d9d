"""Who owns a path now: lock files, and work folders named after the process that made them.

A lock is an exclusive `flock` on its file, released by the kernel when its holder ends; the file
names the holder for whoever finds it busy. Work folders carry their owner's host and process
id, so that a later job on the same host removes a killed owner's folders (never read as data).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import socket
import stat
import uuid
from collections.abc import Iterator
from pathlib import Path

from core.errors import RagEvidenceError

LOCK_SUFFIX = ".lock"
"""A lock file's name: `.NAME` + this, beside what it guards."""
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
        BusyError: a live process holds it, named by host and pid; or the lock is not a
            regular file.
    """
    take(lock, what)
    try:
        yield
    finally:
        release(lock)


def lock_of(path: str | Path) -> Path:
    """The lock file of `path`: `.NAME.lock` beside the file or folder `path` really is (links
    resolved), so that two names of one thing share one lock."""
    real = Path(os.path.realpath(path))
    return real.parent / f".{real.name}{LOCK_SUFFIX}"


_HELD: dict[Path, int] = {}
"""The lock files this process holds, and the descriptor whose `flock` holds each."""


def take(lock: Path, what: str) -> None:
    """Takes `lock` for this process (see `held`): an exclusive `flock` on the lock file, which
    the kernel releases when its holder ends however it ends, so a killed holder's lock is free
    and a pid reused by another process means nothing. The holder writes its host, pid and
    start time into the file, for the message of whoever finds it busy.

    Raises:
        BusyError: see `held`.
    """
    for _ in range(10):
        descriptor = _open_lock(lock, what)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(descriptor)
            os.close(descriptor)
            raise BusyError(f"{what} is in use by {holder} (lock {lock}); wait for it to "
                            "end") from None
        if not _still_at(lock, descriptor):  # its holder removed it as we opened it
            os.close(descriptor)
            continue
        os.ftruncate(descriptor, 0)
        os.write(descriptor, f"{socket.gethostname()} {os.getpid()} {_started()}\n".encode())
        _HELD[lock] = descriptor
        return
    raise BusyError(f"{what}: the lock {lock} keeps being replaced; another job is starting")


def release(lock: Path) -> None:
    """Removes and unlocks `lock`, if this process holds it."""
    descriptor = _HELD.pop(lock, None)
    if descriptor is None:
        return
    with contextlib.suppress(FileNotFoundError):
        lock.unlink()  # before unlocking: whoever opened it meanwhile sees it gone and retries
    os.close(descriptor)


def _open_lock(lock: Path, what: str) -> int:
    try:
        mode = os.lstat(lock).st_mode
    except FileNotFoundError:
        mode = stat.S_IFREG
    if not stat.S_ISREG(mode):
        raise BusyError(f"{what}: its lock {lock} is not a regular file (a folder, a link or a "
                        "device); remove it")
    try:
        return os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
    except OSError as error:
        raise BusyError(f"{what}: its lock {lock} cannot be opened ({error.strerror})"
                        ) from None


def _still_at(lock: Path, descriptor: int) -> bool:
    try:
        return os.stat(lock, follow_symlinks=False).st_ino == os.fstat(descriptor).st_ino
    except FileNotFoundError:
        return False


def _holder(descriptor: int) -> str:
    """The holder as its lock file names it: `process PID on HOST`."""
    try:
        host, pid, *_ = os.pread(descriptor, 512, 0).decode("utf-8").split()
    except (OSError, ValueError):
        return "another process (starting: it has not written its name yet)"
    return f"process {pid} on {host}"


def _started() -> str:
    """This process's start time, in clock ticks since boot (`/proc/self/stat`), or `-`."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        return fields[19]
    except (OSError, IndexError):
        return "-"


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
