"""Workers that have only the wheel: the way Flink, Spark and Dataflow run the job.

Builds the project's wheel, installs it alone with its `semantic` extra (its dependencies at
the driver's versions) into a new virtual environment, which must hold no PyTorch, starts
Beam's SDK worker pool from that environment, outside this checkout, and runs the job through
the portable runner with EXTERNAL workers: the output must equal the in-memory run's.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from engines.wheel import build_wheel
from tests.builders import unit_vectors
from tests.pipeline.cli_runs import DIM, lines_of

pytestmark = pytest.mark.slow  # a wheel built into a venv of its own

ROOT = Path(__file__).parents[3]


def _pip(python: Path | str, *args: str, cwd: Path) -> str:
    done = subprocess.run([str(python), "-m", "pip", *args], cwd=cwd, env=_clean_env(),
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _clean_env() -> dict[str, str]:
    """No PYTHONPATH and no virtual environment of ours leaks into the worker's."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


@pytest.fixture(scope="module")
def wheel_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The python of a new venv holding only the wheel with its `semantic` extra and what they
    depend on."""
    root = tmp_path_factory.mktemp("wheel")
    wheel = build_wheel(root / "dist")
    constraints = root / "constraints.txt"
    constraints.write_text(_pip(sys.executable, "freeze", "--exclude-editable", cwd=root))
    subprocess.run([sys.executable, "-m", "venv", str(root / "venv")], check=True)
    python = root / "venv" / "bin" / "python"
    _pip(python, "install", "-q", "--constraint", str(constraints), f"{wheel}[semantic]",
         cwd=root)
    return python


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def worker_pool(wheel_python: Path) -> Iterator[str]:
    """Beam's SDK worker pool, run by the wheel's venv from a folder outside the checkout."""
    port = _free_port()
    cwd = wheel_python.parents[2]
    # the pool starts each worker as `python` from PATH: the venv must be active
    activated = {**_clean_env(), "VIRTUAL_ENV": str(wheel_python.parents[1]),
                 "PATH": f"{wheel_python.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    pool = subprocess.Popen(
        [str(wheel_python), "-m", "apache_beam.runners.worker.worker_pool_main",
         f"--service_port={port}"], cwd=cwd, env=activated,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("localhost", port)) == 0:
                    break
            assert pool.poll() is None, "the worker pool exited"
            time.sleep(0.2)
        yield f"localhost:{port}"
    finally:
        pool.kill()
        pool.wait()


def test_the_wheel_venv_imports_the_package_from_the_wheel_not_the_checkout(
        wheel_python: Path) -> None:
    done = subprocess.run([str(wheel_python), "-c", "import pipeline, stages, connectors, core; "
                           "print(pipeline.__file__)"], cwd=wheel_python.parents[2],
                          env=_clean_env(), capture_output=True, text=True, check=True)
    location = Path(done.stdout.strip())
    assert "site-packages" in location.parts and ROOT not in location.parents


def test_the_semantic_workers_hold_no_torch_and_embed_with_the_packaged_model(
        wheel_python: Path, tmp_path: Path) -> None:
    script = ("import importlib.util, sys\n"
              "assert importlib.util.find_spec('torch') is None, 'torch is installed'\n"
              "from connectors.embedders.sentence_transformer import SentenceTransformerEmbedder\n"
              "print(SentenceTransformerEmbedder('all-MiniLM-L6-v2').embed(['a query']).shape)\n")
    done = subprocess.run([str(wheel_python), "-c", script], cwd=wheel_python.parents[2],
                          env={**_clean_env(), "RAG_EVIDENCE_MODEL_CACHE": str(tmp_path)},
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "(1, 384)"


def _run(config: Path, queries: Path, out: Path, *runner: str) -> tuple[list, list]:
    """`run` in a process of its own, so that a worker that never comes up fails the test
    after a while instead of hanging it (the portable runner waits for workers forever)."""
    dead = out.with_suffix(".dead.jsonl")
    args = ["run", "--config", str(config), "--queries", str(queries), "--out", str(out),
            "--dead-letter", str(dead), *runner]
    done = subprocess.run([sys.executable, "-c", "import sys; from pipeline.cli.main import main; "
                           "sys.exit(main(sys.argv[1:]))", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return (sorted(lines_of(out), key=lambda r: r["query_id"]),
            sorted(lines_of(dead), key=lambda d: d["line_number"]))


def test_external_workers_with_only_the_wheel_give_the_in_memory_output(
        store_config: Path, worker_pool: str, tmp_path: Path) -> None:
    vectors = unit_vectors(40, dim=DIM)
    queries = tmp_path / "queries.jsonl"
    queries.write_text("\n".join([
        *(json.dumps({"id": f"v{i}", "vector": vectors[i].tolist()}) for i in range(0, 40, 3)),
        json.dumps({"id": "t", "text": "content 12"}),
        json.dumps({"id": "f", "vector": vectors[5].tolist(), "filters": {"docId": "doc2"}}),
        "not json",
        json.dumps({"id": "v0", "vector": vectors[1].tolist()}),
    ]) + "\n")
    expected = _run(store_config, queries, tmp_path / "memory.jsonl")
    external = _run(store_config, queries, tmp_path / "external.jsonl",
                    "--runner", "PortableRunner", "--job_endpoint", "embed",
                    "--environment_type", "EXTERNAL", "--environment_config", worker_pool)
    assert external == expected
    assert len(expected[0]) == 16 and [d["line_number"] for d in expected[1]] == [17, 18]
