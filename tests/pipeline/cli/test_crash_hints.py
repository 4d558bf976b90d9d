"""A crash whose cause we know says what it means and where the docs say what to do, after
the crash line; any other crash says only what it is."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pipeline.cli.crash_hints import CRASH_HINTS, crash_hint
from pipeline.cli.main import main

ROOT = Path(__file__).resolve().parents[3]
FLINK_FAILED = ("Pipeline rag-evidence-1_2 failed in state FAILED: java.io.IOException: "
                "Insufficient number of network buffers: required 512, but only 507 available.")


def _crashing_run(store_config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                  message: str) -> int:
    def engine_failed(*_: object, **__: object) -> None:  # as Beam's wait for a Flink job
        raise RuntimeError(message)

    monkeypatch.setattr("pipeline.run.job.run_to_completion", engine_failed)
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"id": "q", "text": "content 1"}\n')
    return main(["run", "--config", str(store_config), "--queries", str(queries),
                 "--out", str(tmp_path / "out.jsonl")])


def test_a_flink_cluster_short_of_network_buffers_is_told_where_to_read_on(
        store_config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    assert _crashing_run(store_config, tmp_path, monkeypatch, FLINK_FAILED) == 3
    err = capsys.readouterr().err
    crashed = err.index("rag-evidence: crashed: RuntimeError")
    hint = err.index("rag-evidence: the Flink cluster's network memory is too small")
    assert crashed < hint and "docs/runners.md (Flink's network memory)" in err[hint:]


def test_any_other_crash_has_no_hint(store_config: Path, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert _crashing_run(store_config, tmp_path, monkeypatch, "something else broke") == 3
    lines = [line for line in capsys.readouterr().err.splitlines()
             if line.startswith("rag-evidence: ")]
    assert len(lines) == 1 and lines[0].startswith("rag-evidence: crashed: ")
    assert crash_hint("something else broke") is None


@pytest.mark.parametrize("piece", CRASH_HINTS)
def test_each_hint_names_a_section_the_page_has(piece: str) -> None:
    hint = crash_hint(f"... {piece} ...")
    assert hint is not None
    page, section = re.fullmatch(r".*: see (\S+) \((.+)\)", hint).groups()  # type: ignore[union-attr]
    assert f"- **{section}.**" in (ROOT / page).read_text()
