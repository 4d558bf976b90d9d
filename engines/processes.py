"""Processes of the local clusters and servers: a free loopback port, and a process group
stopped, first politely."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def stop_process_group(process: subprocess.Popen[bytes]) -> None:
    """Stops a process started with `start_new_session=True` and everything it spawned (the
    `noida-db` script runs the server as a child process)."""
    for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 5)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue
