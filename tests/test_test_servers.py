"""The servers a test session starts end with it, however it ends (Ctrl-C left two running)."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SESSION = """
import sys, time
from pathlib import Path
from tests.es_server import running_server
with running_server(Path(sys.argv[1])) as url:
    print(url, flush=True)
    time.sleep(600)
"""


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


@pytest.mark.slow  # starts a server
def test_a_server_stops_when_the_session_that_started_it_is_killed(tmp_path: Path) -> None:
    session = subprocess.Popen([sys.executable, "-c", SESSION, str(tmp_path)], cwd=ROOT,
                               stdout=subprocess.PIPE, text=True)
    assert session.stdout is not None
    url = session.stdout.readline().strip()
    assert _answers(url)
    session.kill()  # no teardown runs
    session.wait()
    deadline = time.monotonic() + 20
    while _answers(url) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _answers(url), f"the server at {url} outlived its session"
