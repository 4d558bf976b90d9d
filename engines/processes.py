"""Processes of the local clusters and servers: a free loopback port, and a process group
stopped, first politely."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
import subprocess
from pathlib import Path

LOWEST_PORT = 10000


def free_port() -> int:
    """A loopback port free now, chosen below the kernel's ephemeral range: a server that
    asks for any port (port 0, as gRPC servers and Beam's worker pools do) gets one from
    that range, so it cannot take ours between our choosing it and the cluster binding it
    (a Flink REST port answered by a gRPC server failed a CI run so)."""
    low, _ = _ephemeral_range()
    for _ in range(200):
        port = random.randrange(LOWEST_PORT, max(low, LOWEST_PORT + 1))
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as sock:  # nothing free below the range: any port
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


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
