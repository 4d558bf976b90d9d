"""A process's own peak RSS, for the benches that run `rag-evidence` in a child.

Not `ru_maxrss`: a child started by vfork and exec (as `subprocess` starts one) records its
parent's peak there at exec, for RUSAGE_SELF and RUSAGE_CHILDREN alike, and a bench's parent
holds the store and the queries. The kernel's `VmHWM` of the process is its own."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path


def high_water_kib(pid: int | str = "self") -> int:
    """`VmHWM` of process `pid` (this one by default) in KiB; 0 once it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    return next((int(line.split()[1]) for line in status.splitlines()
                 if line.startswith("VmHWM:")), 0)


def run_watching_peak(command: Sequence[str]) -> tuple[float, int, int]:
    """Runs `command` (its output discarded): wall seconds, its own peak RSS in MiB (sampled
    every 0.1 s until it exits) and its exit code."""
    started = time.perf_counter()
    child = subprocess.Popen(list(command), stdout=subprocess.DEVNULL)
    peak, status = 0, None
    while status is None:
        peak = max(peak, high_water_kib(child.pid))
        pid, code = os.waitpid(child.pid, os.WNOHANG)
        if pid:
            status = code
        else:
            time.sleep(0.1)
    return time.perf_counter() - started, peak // 1024, os.waitstatus_to_exitcode(status)
