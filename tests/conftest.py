"""Session fixtures: an Elasticsearch-compatible server for the live tests.

When ES_URL is set, the live tests run against that cluster. Otherwise one `noida-db` server
(a local server speaking the Elasticsearch 8.15 REST API) is started on a free loopback port for
the whole session and stopped at its end.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from elasticsearch import Elasticsearch


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_until_up(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"noida-db exited with {process.returncode}: {log.read_text()}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"noida-db did not answer at {url} within 60 s: {log.read_text()}")


@pytest.fixture(scope="session")
def es_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if os.environ.get("ES_URL"):
        yield os.environ["ES_URL"]
        return
    executable = shutil.which("noida-db") or str(Path(sys.executable).parent / "noida-db")
    port = _free_port()
    data = tmp_path_factory.mktemp("noida-db")
    log = data / "server.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [executable, "start", "--only", "elasticsearch", "--elasticsearch-port", str(port),
             "--data-dir", str(data / "data")],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(url, process, log)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture
def es_client(es_url: str) -> Iterator[Elasticsearch]:
    client = Elasticsearch(es_url, request_timeout=30)
    yield client
    client.close()


@pytest.fixture
def es_index(es_client: Elasticsearch) -> Iterator[str]:
    """A fresh index name, deleted after the test."""
    name = f"test-{uuid.uuid4().hex[:10]}"
    yield name
    es_client.options(ignore_status=404).indices.delete(index=name)
