"""`run --previous PREV`: a nightly run writes only the queries whose evidence changed, counts
unchanged, changed and new, and names PREV's queries that are gone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.cli.main import main
from pipeline.io.json_lines import to_json_line
from pipeline.run.changed_only import changed_results, same_evidence
from stages.models import ProjectedItem, QueryResult
from tests.builders import unit_vectors

VECTORS = unit_vectors(4, dim=8, seed=11)


def _line(query_id: str, row: int) -> str:
    return json.dumps({"id": query_id, "vector": VECTORS[row].tolist()})


def _run(config: Path, folder: Path, lines: list[str], *extra: str) -> tuple[int, Path]:
    folder.mkdir()
    queries, out = folder / "q.jsonl", folder / "out.jsonl"
    queries.write_text("\n".join(lines) + "\n")
    code = main(["run", "--config", str(config), "--queries", str(queries), "--out", str(out),
                 "--summary", str(folder / "summary.json"), *extra])
    return code, out


def _ids(path: Path) -> list[str]:
    return sorted(json.loads(x)["query_id"] for x in path.read_text().splitlines())


def test_an_unchanged_rerun_writes_nothing_and_is_balanced(store_config: Path,
                                                           tmp_path: Path) -> None:
    lines = [_line("a", 0), _line("b", 1)]
    _, first = _run(store_config, tmp_path / "1", lines)
    code, second = _run(store_config, tmp_path / "2", lines, "--previous", str(first))
    summary = json.loads((tmp_path / "2" / "summary.json").read_text())
    assert code == 0 and second.read_text() == ""
    assert summary["counts"]["evidence_unchanged"] == 2 and summary["balanced"]


@pytest.mark.parametrize("suffix", ["jsonl", "parquet"])
def test_changed_and_new_queries_are_written_and_gone_ones_named(
        store_config: Path, tmp_path: Path, suffix: str) -> None:
    folder = tmp_path / "1"
    folder.mkdir()
    queries, first = folder / "q.jsonl", folder / f"out.{suffix}"
    queries.write_text("\n".join([_line("same", 0), _line("moved", 1), _line("gone", 2)]) + "\n")
    assert main(["run", "--config", str(store_config), "--queries", str(queries),
                 "--out", str(first)]) == 0
    code, second = _run(store_config, tmp_path / "2",
                        [_line("same", 0), _line("moved", 3), _line("fresh", 2)],
                        "--previous", str(first))
    counts = json.loads((tmp_path / "2" / "summary.json").read_text())["counts"]
    assert code == 0 and _ids(second) == ["fresh", "moved"]
    assert (counts["evidence_unchanged"], counts["evidence_changed"], counts["evidence_new"],
            counts["previous_gone"]) == (1, 1, 1, 1)
    assert _ids(Path(f"{second}").with_name("out.jsonl.gone.jsonl")) == ["gone"]
    manifest = json.loads(Path(f"{second}.manifest.json").read_text())
    assert manifest["previous"]["path"] == str(first)


def test_previous_and_out_must_be_different_files(store_config: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    _, first = _run(store_config, tmp_path / "1", [_line("a", 0)])
    queries = tmp_path / "1" / "q.jsonl"
    assert main(["run", "--config", str(store_config), "--queries", str(queries),
                 "--out", str(first), "--previous", str(first)]) == 2
    assert "is the same file as --previous" in capsys.readouterr().err


def _result(*items: tuple[str, float]) -> QueryResult:
    return QueryResult(query_id="q", evidence=(), projected=tuple(
        ProjectedItem(document_id=key, source=key, content="c", score=score)
        for key, score in items))


def test_evidence_differs_by_ids_order_or_content_not_by_score_noise() -> None:
    base = _result(("a#chunk-0", 0.9), ("b#chunk-0", 0.8))
    assert same_evidence(_result(("a#chunk-0", 0.9 + 1e-7), ("b#chunk-0", 0.8)), base)
    assert not same_evidence(_result(("b#chunk-0", 0.8), ("a#chunk-0", 0.9)), base)
    assert not same_evidence(_result(("a#chunk-0", 0.9)), base)
    assert not same_evidence(_result(("a#chunk-0", 0.91), ("b#chunk-0", 0.8)), base)


@pytest.mark.parametrize("items", [
    (("a#chunk-0", 0.9 + 1e-7), ("b#chunk-0", 0.8)), (("b#chunk-0", 0.8), ("a#chunk-0", 0.9)),
    (("a#chunk-0", 0.9),), (("a#chunk-0", 0.91), ("b#chunk-0", 0.8)),
    (("a#chunk-0", 0.9), ("b#chunk-0", 0.8))])
def test_result_lines_are_compared_as_the_results_are(items: tuple) -> None:
    """A shard compares the lines it kept without making results of the unchanged ones; it
    finds what `same_evidence` finds."""
    base = _result(("a#chunk-0", 0.9), ("b#chunk-0", 0.8))
    new = _result(*items)
    line = to_json_line(new).encode()
    changed = list(changed_results({"q": line}, {"q": to_json_line(base).encode()}))
    assert (changed == []) == same_evidence(new, base)
    assert list(changed_results({"q": line}, {})) == [new]


def test_nightly_runs_chain_through_the_snapshot_of_every_result(
        store_config: Path, tmp_path: Path) -> None:
    lines = [_line("a", 0), _line("b", 1), _line("c", 2)]
    _, night1 = _run(store_config, tmp_path / "1", lines)
    snapshot2 = tmp_path / "snapshot2.jsonl"
    _, night2 = _run(store_config, tmp_path / "2", [*lines[:2], _line("c", 3)],
                     "--previous", str(night1), "--snapshot", str(snapshot2))
    assert _ids(night2) == ["c"] and _ids(snapshot2) == ["a", "b", "c"]
    counts = json.loads((tmp_path / "2" / "summary.json").read_text())["counts"]
    assert counts["results"] == 1  # the snapshot is a copy, not more results
    manifest = json.loads(Path(f"{night2}.manifest.json").read_text())
    assert manifest["snapshot"]["path"] == str(snapshot2) and manifest["balanced"]
    code, night3 = _run(store_config, tmp_path / "3", [*lines[:2], _line("c", 3)],
                        "--previous", str(snapshot2))
    assert code == 0 and night3.read_text() == ""  # against night 2's --out, a and b are new


def test_a_snapshot_without_previous_is_refused(store_config: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = _run(store_config, tmp_path / "1", [_line("a", 0)],
                   "--snapshot", str(tmp_path / "s.jsonl"))
    assert code == 2 and "--snapshot" in capsys.readouterr().err



def test_a_night_whose_every_query_is_a_dead_letter_keeps_an_empty_state(
        store_config: Path, tmp_path: Path) -> None:
    # no result and no state row: the state's merge had no parts folder to write into
    bad = [json.dumps({"id": "odd\ud800", "vector": VECTORS[0].tolist()}), "{not json"]
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    for night, previous in ((1, empty), (2, tmp_path / "snapshot1.jsonl")):
        snapshot = tmp_path / f"snapshot{night}.jsonl"
        code, out = _run(store_config, tmp_path / str(night), bad, "--previous", str(previous),
                         "--snapshot", str(snapshot))
        summary = json.loads((tmp_path / str(night) / "summary.json").read_text())
        assert code == 0 and summary["counts"]["dead_letters"] == 2 and summary["balanced"]
        assert out.read_text() == "" and snapshot.read_text() == ""
        manifest = json.loads(Path(f"{snapshot}.manifest.json").read_text())
        assert set(manifest["state"]["sha256"]) >= {"queries.arrow"}
