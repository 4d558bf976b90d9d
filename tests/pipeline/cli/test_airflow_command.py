"""The command line Airflow's BeamRunPythonPipelineOperator builds (docs/scheduled-jobs.md):
`PY_INTERPRETER *py_options py_file --runner=R --labels=... --KEY=VALUE ...`, here with
py_options ["-m", "pipeline.cli"] and py_file the command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.builders import chunk_records, unit_vectors

pytestmark = pytest.mark.slow  # the commands as subprocesses

REPO = Path(__file__).resolve().parents[3]


def _operator_command(command: str, options: dict[str, Any]) -> list[str]:
    """As the Beam provider's hook spells options: `--key=value`, a list as one per value,
    True as a bare flag, and the labels the operator always adds."""
    args = [sys.executable, "-m", "pipeline.cli", command, "--runner=DirectRunner",
            "--labels=airflow-version=v2-10-5"]
    for key, value in options.items():
        values = value if isinstance(value, list) else [value]
        args += [f"--{key}" if v is True else f"--{key}={v}" for v in values]
    return args


def _ok(args: list[str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def test_index_and_run_as_the_beam_operator_calls_them(tmp_path: Path) -> None:
    chunks, config = tmp_path / "chunks.jsonl", tmp_path / "config.yaml"
    chunks.write_text("".join(r.model_dump_json() + "\n"
                              for r in chunk_records(unit_vectors(12, dim=8), chunks_per_doc=3)))
    config.write_text(f"search:\n  embedded:\n    path: {tmp_path / 'store'}\n"
                      "embedder:\n  dim: 8\n")
    _ok(_operator_command("index", {"config": config, "chunks": chunks,
                                    "summary": tmp_path / "index.json"}))
    assert json.loads((tmp_path / "index.json").read_text())["added"] == 12

    queries, out = tmp_path / "q.jsonl", tmp_path / "out.jsonl"
    queries.write_text("".join(json.dumps({"id": f"q{i}", "vector": v.tolist()}) + "\n"
                               for i, v in enumerate(unit_vectors(3, dim=8, seed=5))))
    _ok(_operator_command("run", {"config": config, "queries": queries, "out": out,
                                  "dead-letter": tmp_path / "dead.jsonl",
                                  "summary": tmp_path / "run.json"}))
    assert len(out.read_text().splitlines()) == 3
    assert (tmp_path / "dead.jsonl").read_text() == ""
    manifest = json.loads(Path(f"{out}.manifest.json").read_text())
    assert manifest["runner"] == "DirectRunner"
