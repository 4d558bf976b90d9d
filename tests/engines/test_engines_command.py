"""`python -m engines`, the checkout's command that starts a local cluster for a user: one line
where Java or Maven is missing; a cluster that answers the job it prints the options of, and
stops on Ctrl-C."""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.engines.jobs import JOB_SECONDS, cli, results_of

ROOT = Path(__file__).resolve().parents[2]


def test_without_java_or_maven_it_is_one_line_naming_them() -> None:
    path = str(Path(sys.executable).parent)  # the venv alone: no java, no mvn
    done = subprocess.run([sys.executable, "-m", "engines", "flink"], cwd=ROOT,
                          capture_output=True, text=True, env={**os.environ, "PATH": path},
                          timeout=120, check=False)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "python -m engines: needs java and mvn on PATH: Java 17 and Maven (Debian: apt-get "
        "install openjdk-17-jre-headless maven)")


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.engines
@pytest.mark.slow  # a Spark cluster of its own
def test_a_spark_cluster_it_starts_answers_the_job_it_prints_and_stops_on_ctrl_c(
        tmp_path: Path, sdk_env: dict[str, str]) -> None:
    started = subprocess.Popen(
        [sys.executable, "-m", "engines", "spark", "--work", str(tmp_path / "cluster")],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert started.stdout is not None
    printed = []
    deadline = time.monotonic() + JOB_SECONDS
    while not any(line.startswith("Paths must") for line in printed):
        assert time.monotonic() < deadline and started.poll() is None, started.stderr
        printed.append(started.stdout.readline())
    launcher, *_ = shlex.split(next(line for line in printed if " run --config C" in line))
    options = shlex.split(printed[printed.index(next(
        line for line in printed if " run --config C" in line)) + 1])
    master = options[options.index("--spark_master_url") + 1]
    try:
        docs, config = tmp_path / "docs", tmp_path / "config.yaml"
        docs.mkdir()
        (docs / "a.md").write_text("# Files\n\nHow to read a file line by line.\n")
        config.write_text(f"search:\n  embedded:\n    path: {tmp_path / 'store'}\n")
        queries = tmp_path / "q.jsonl"
        queries.write_text(json.dumps({"id": "q", "text": "read a file"}) + "\n")
        python = Path(launcher).parent / "python"
        cli(python, sdk_env, tmp_path, "index", "--config", str(config), "--docs", str(docs))
        cli(python, sdk_env, tmp_path, "run", "--config", str(config), "--queries",
            str(queries), "--out", str(tmp_path / "out.jsonl"), *options)
        assert results_of(tmp_path / "out.jsonl")["q"]["evidence"][0]["doc_id"] == "a.md"
    finally:
        started.send_signal(signal.SIGINT)
        assert started.wait(timeout=120) == 0
    assert not _listening(int(master.rsplit(":", 1)[1]))
