"""A finished run says what it was computed from (`OUT.manifest.json`, written last), its result
files appear whole, and a run that fails leaves no manifest that vouches for a partial output."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from connectors.embedded.store import EmbeddedStore
from connectors.embedded.versions import current_version
from connectors.search_port import KnowledgeSearchPort
from pipeline.cli.main import main
from pipeline.config.loader import load_settings
from pipeline.run.job import run_job

VECTOR = json.dumps({"id": "q1", "vector": [1.0] + [0.0] * 7})
_OPENED: list[int] = []


def _run(config: Path, tmp_path: Path, *extra: str) -> tuple[int, Path]:
    queries, out = tmp_path / "q.jsonl", tmp_path / "out.jsonl"
    queries.write_text(VECTOR + "\n" + '{"id": "bad"}\n')
    code = main(["run", "--config", str(config), "--queries", str(queries), "--out", str(out),
                 *extra])
    return code, out


def test_a_run_writes_a_manifest_that_matches_its_files(store_config: Path,
                                                         tmp_path: Path) -> None:
    code, out = _run(store_config, tmp_path, "--summary", str(tmp_path / "summary.json"))
    manifest = json.loads(Path(f"{out}.manifest.json").read_text())
    assert code == 0
    assert manifest["results"]["sha256"] == hashlib.sha256(out.read_bytes()).hexdigest()
    assert manifest["results"]["bytes"] == out.stat().st_size
    assert manifest["counts"]["queries"] == 2 and manifest["balanced"] is True
    assert manifest["dead_letters"]["by_stage"] == {"parse": 1}
    assert manifest["store"]["backend"] == "embedded"
    assert manifest["store"]["manifest"]["count"] == 40
    store = Path(manifest["store"]["path"])
    assert manifest["store"]["version"] == current_version(store).name  # the one it read
    assert manifest["queries"]["records"] == 2 and manifest["runner"] == "FnApiRunner"
    assert manifest["started"] <= manifest["ended"]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["counts"]["results"] == 1 and summary["balanced"] is True


def _port_that_fails_in_the_job(path: str) -> KnowledgeSearchPort:
    """Opens for the driver's preflight, then fails in the job, as a crash there would."""
    _OPENED.append(1)
    if len(_OPENED) > 1:
        raise RuntimeError("the worker died")
    return EmbeddedStore.open(path)


def test_a_failed_run_leaves_the_previous_results_whole_and_no_manifest(
        store_config: Path, tmp_path: Path) -> None:
    settings = load_settings(store_config)
    queries, out = tmp_path / "q.jsonl", tmp_path / "out.jsonl"
    queries.write_text(VECTOR + "\n")
    out.write_text("yesterday's results\n")
    Path(f"{out}.manifest.json").write_text("{}")
    _OPENED.clear()
    with pytest.raises(Exception, match="the worker died"):
        run_job(settings, queries_path=str(queries), out_path=str(out),
                port_factory=lambda: _port_that_fails_in_the_job(
                    settings.search.embedded.path))
    assert out.read_text() == "yesterday's results\n"
    assert not Path(f"{out}.manifest.json").exists()
