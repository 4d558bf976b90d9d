"""A worker killed mid-run on a real engine: the engine retries and the evidence is whole and
equal to the local runner's, or the run fails and the previous OUT stays as it was, with no
manifest vouching for a run that did not finish."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from engines.clusters import WorkerPool
from tests.engines.jobs import JOB_SECONDS, cli, results_of

pytestmark = [pytest.mark.engines, pytest.mark.slow]

QUERIES = 10_000
"""Enough that the job is still running seconds after its first worker came up."""
WORKED_SECONDS = 2.0
"""The CPU time an SDK worker has spent when it is killed: past start-up, mid-bundle (killed
while Flink was still setting up its environment, one made the job hang, never failing)."""
AFTER_KILL_SECONDS = 300
"""How long the job may take to finish or fail once a worker was killed."""
PREVIOUS = "a previous night's evidence\n"


@pytest.fixture(scope="module")
def hashing_store(tmp_path_factory: pytest.TempPathFactory, sdk_python: Path,
                  sdk_env: dict[str, str], corpus: Path) -> Path:
    """The corpus indexed with the hashing embedder; returns the config that reads it."""
    root = tmp_path_factory.mktemp("hashing")
    config = root / "config.yaml"
    config.write_text(f"search:\n  embedded:\n    path: {root / 'store'}\n    index: flat\n"
                      "embedder:\n  kind: hashing\n  dim: 384\n")
    cli(sdk_python, sdk_env, root, "index", "--config", str(config), "--docs", str(corpus))
    return config


@pytest.fixture(scope="module")
def many_queries(tmp_path_factory: pytest.TempPathFactory) -> Path:
    vectors = np.random.default_rng(5).normal(size=(QUERIES, 384)).round(6)
    path = tmp_path_factory.mktemp("many") / "queries.jsonl"
    path.write_text("".join(json.dumps({"id": f"q{i}", "vector": v.tolist()}) + "\n"
                            for i, v in enumerate(vectors)))
    return path


def test_a_killed_worker_leaves_whole_evidence_or_the_previous_out(
        engine: list[str], worker_pool: WorkerPool, tmp_path: Path, sdk_python: Path,
        sdk_env: dict[str, str], hashing_store: Path, many_queries: Path) -> None:
    out, log = tmp_path / "out.jsonl", tmp_path / "run.log"
    out.write_text(PREVIOUS)
    earlier = set(worker_pool.workers())  # of jobs run before, if any still linger
    with log.open("w") as output:
        job = subprocess.Popen(
            [str(sdk_python), "-m", "pipeline.cli", "run", "--config", str(hashing_store),
             "--queries", str(many_queries), "--out", str(out), "--dead-letter",
             str(tmp_path / "dead.jsonl"), *engine],
            cwd=tmp_path, env=sdk_env, stdout=output, stderr=subprocess.STDOUT)
    try:
        killed = _kill_one_worker(worker_pool, earlier, job)
        assert killed, f"the job ended before a worker could be killed:\n{log.read_text()[-3000:]}"
        try:
            code = job.wait(timeout=AFTER_KILL_SECONDS)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the job neither finished nor failed {AFTER_KILL_SECONDS} s after "
                        f"its SDK worker {killed} was killed: the engine hung")
    finally:
        job.kill()
    print(f"{engine[1]}: SDK worker {killed} killed mid-run, the run exited {code}")

    manifest = Path(f"{out}.manifest.json")
    if code == 0:
        local = tmp_path / "local.jsonl"
        cli(sdk_python, sdk_env, tmp_path, "run", "--config", str(hashing_store), "--queries",
            str(many_queries), "--out", str(local))
        assert results_of(out) == results_of(local) and len(results_of(out)) == QUERIES
        assert manifest.exists()
    else:
        assert code == 3, f"exit {code}\n{log.read_text()[-3000:]}"
        assert out.read_text() == PREVIOUS
        assert not manifest.exists()


WALL_TIME_SECONDS = 30
"""The wall time of the run below: less than its 10k queries take on Flink here once its
workers are up (37 s), so that it always ends by the limit."""


def test_a_job_whose_worker_dies_in_setup_ends_by_its_wall_time(
        flink: list[str], worker_pool: WorkerPool, tmp_path: Path, sdk_python: Path,
        sdk_env: dict[str, str], hashing_store: Path, many_queries: Path) -> None:
    """The hang seen once under the real-engines issue: a worker killed while Flink sets up its
    environment. Whatever Flink then does (hang, fail or restart), `--max-wall-time` ends the
    run by its limit: exit 3, the previous OUT as it was, no manifest, and the job no longer
    running on the cluster."""
    out, log = tmp_path / "out.jsonl", tmp_path / "run.log"
    out.write_text(PREVIOUS)
    earlier = set(worker_pool.workers())
    started = time.monotonic()
    with log.open("w") as output:
        job = subprocess.Popen(
            [str(sdk_python), "-m", "pipeline.cli", "run", "--config", str(hashing_store),
             "--queries", str(many_queries), "--out", str(out), "--max-wall-time",
             str(WALL_TIME_SECONDS), *flink],
            cwd=tmp_path, env=sdk_env, stdout=output, stderr=subprocess.STDOUT)
    try:  # a job server slower to start than the limit ends the run before any worker
        killed = _kill_one_worker(worker_pool, earlier, job, worked_seconds=0.0)
        code = job.wait(timeout=WALL_TIME_SECONDS + 120)
    finally:
        job.kill()
    took = time.monotonic() - started
    assert code == 3, f"exit {code}\n{log.read_text()[-3000:]}"
    said = log.read_text()
    assert "max-wall-time=30 s" in said or "crashed" in said, said[-3000:]  # Flink failed it
    assert out.read_text() == PREVIOUS and not Path(f"{out}.manifest.json").exists()
    rest = flink[flink.index("--flink_master") + 1]
    running = _running_jobs(rest)
    print(f"flink: worker {killed} killed in setup; the run exited {code} after {took:.0f} s; "
          f"jobs still running: {running}")
    assert not running, (f"the cancelled job still runs on the cluster: {running}\n"
                         f"{log.read_text()[-3000:]}")


def _running_jobs(rest: str, wait_seconds: float = 30) -> list[str]:
    """The ids of the jobs the Flink cluster at `rest` still runs, once those being cancelled
    had `wait_seconds` to end."""
    deadline = time.monotonic() + wait_seconds
    while True:
        url = rest if rest.startswith("http") else f"http://{rest}"
        with urllib.request.urlopen(f"{url}/jobs/overview", timeout=5) as answer:
            jobs = json.load(answer)["jobs"]
        running = [f'{j["jid"]} {j["name"]!r} {j["state"]}' for j in jobs if j["state"] not in
                   ("FINISHED", "FAILED", "CANCELED")]
        if not running or time.monotonic() > deadline:
            return running
        time.sleep(1)


def _kill_one_worker(pool: WorkerPool, earlier: set[int], job: subprocess.Popen,
                     worked_seconds: float = WORKED_SECONDS) -> int | None:
    """SIGKILLs the first SDK worker the pool started for `job` to have spent
    `worked_seconds` of CPU, if the job is still running then; returns the id it killed."""
    deadline = time.monotonic() + JOB_SECONDS
    while job.poll() is None and time.monotonic() < deadline:
        for worker in sorted(set(pool.workers()) - earlier):
            if _cpu_seconds(worker) >= worked_seconds:
                os.kill(worker, signal.SIGKILL)
                return worker
        time.sleep(0.1)
    return None


def _cpu_seconds(pid: int) -> float:
    """User and system CPU time of process `pid` (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
