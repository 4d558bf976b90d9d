"""Starts a local Elasticsearch-compatible server (noida-db) on a free loopback port."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from engines.processes import free_port, stop_process_group


def wait_until_up(url: str, process: subprocess.Popen[bytes], log: Path,
                  seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args} exited with {process.returncode}: "
                               f"{log.read_text(errors='replace')}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"nothing answered at {url} within {seconds} s: {log.read_text()}")


@contextlib.contextmanager
def running_server(data_dir: Path) -> Iterator[str]:
    """`noida-db start --only elasticsearch` in the foreground; yields its URL, stops it after."""
    executable = shutil.which("noida-db") or str(Path(sys.executable).parent / "noida-db")
    port = free_port()
    log = data_dir / "server.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [executable, "start", "--only", "elasticsearch", "--elasticsearch-port", str(port),
             "--data-dir", str(data_dir / "data")],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    guard = stopped_when_we_end(process)
    try:
        wait_until_up(url, process, log)
        yield url
    finally:
        stop_process_group(process)
        guard.kill()
        guard.wait()


_GUARD = """
import os, signal, sys, time
parent, group = int(sys.argv[1]), int(sys.argv[2])
while os.getppid() == parent:
    time.sleep(0.5)
try:
    os.killpg(group, signal.SIGKILL)
except ProcessLookupError:
    pass
"""


def stopped_when_we_end(process: subprocess.Popen[bytes]) -> subprocess.Popen[bytes]:
    """A watcher that kills `process`'s group once this process ends, however it ends: a test
    session stopped by Ctrl-C, or an xdist worker killed, runs no teardown, and the server
    (in a session of its own, out of reach of the terminal's signals) would outlive it."""
    return subprocess.Popen([sys.executable, "-c", _GUARD, str(os.getpid()), str(process.pid)],
                            stdin=subprocess.DEVNULL, start_new_session=True)
