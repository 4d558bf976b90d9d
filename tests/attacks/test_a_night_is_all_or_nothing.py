"""A night is all or nothing: a run killed at any rename leaves no snapshot the next night will
take as a finished run's; a `--previous` that is not what a finished run left (cut, replaced,
not results, another run's changed-only output) is one line and exit 2; no output flag may name
an input or another output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.cli.main import main
from pipeline.run.changed_only import same_score
from tests.builders import unit_vectors

VECTORS = unit_vectors(6, dim=8, seed=5)

_KILLING_MAIN = """
import os, sys
from apache_beam.io.filesystems import FileSystems
at, calls = int(os.environ["KILL_AT_RENAME"]), [0]
def killing(original):
    def renamed(*args, **kwargs):
        calls[0] += 1
        if calls[0] == at:
            os._exit(9)  # as kill -9: no cleanup runs
        return original(*args, **kwargs)
    return renamed
FileSystems.rename = killing(FileSystems.rename)
os.replace = killing(os.replace)
from pipeline.cli.main import main
from pipeline.run.changed_only import same_score
sys.exit(main(sys.argv[1:]))
"""


def _queries(folder: Path, rows: list[int]) -> Path:
    path = folder / "q.jsonl"
    path.write_text("".join(json.dumps({"id": f"q{i}", "vector": VECTORS[row].tolist()}) + "\n"
                            for i, row in enumerate(rows)))
    return path


def _night(config: Path, folder: Path, rows: list[int], *extra: str) -> list[str]:
    folder.mkdir(exist_ok=True)
    return ["run", "--config", str(config), "--queries", str(_queries(folder, rows)),
            "--out", str(folder / "changed.jsonl"), *extra]


def _finished_night(config: Path, root: Path) -> Path:
    night = root / "night1"
    assert main(_night(config, night, [0, 1, 2, 3])) == 0
    return night / "changed.jsonl"


def _chained_night(config: Path, root: Path) -> tuple[Path, list[str]]:
    """A finished first night, and the argv of the second: against it, with a snapshot."""
    previous = _finished_night(config, root)
    night = root / "night2"
    return previous, _night(config, night, [0], "--previous", str(previous), "--snapshot",
                            str(night / "all.jsonl"))


@pytest.mark.slow
def test_a_run_killed_at_any_rename_leaves_no_snapshot_the_next_night_takes(
        store_config: Path, tmp_path: Path) -> None:
    previous = _finished_night(store_config, tmp_path)
    outcomes = []
    for at in range(1, 12):
        night = tmp_path / f"killed-at-{at}"
        snapshot = night / "all.jsonl"
        argv = _night(store_config, night, [3, 2, 1, 0, 5], "--previous", str(previous),
                      "--snapshot", str(snapshot))
        done = subprocess.run([sys.executable, "-c", _KILLING_MAIN, *argv], check=False,
                              capture_output=True, env={**os.environ, "KILL_AT_RENAME": str(at)})
        if done.returncode == 0:
            break
        assert done.returncode == 9, done.stderr.decode()[-2000:]
        code = main(_night(store_config, tmp_path / f"after-{at}", [0], "--previous",
                           str(snapshot)))
        outcomes.append((snapshot.exists(), code))
        assert code in (0, 2)
        if code == 0:  # taken: then the night was delivered whole, as its manifest says
            assert _delivered(night / "changed.jsonl"), f"killed at rename {at}"
    assert len(outcomes) >= 5 and outcomes[-1][0]  # killed after the snapshot was in place too
    assert [code for _, code in outcomes].count(0) <= 1  # only a kill before the last write
    assert main(_night(store_config, tmp_path / "next", [0], "--previous", str(snapshot))) == 0


def _delivered(out: Path) -> bool:
    """Whether every file that the manifest of `out` names is in place, as it names it."""
    manifest = Path(f"{out}.manifest.json")
    if not manifest.exists():
        return False
    document = json.loads(manifest.read_text())
    files = [document["results"], document["dead_letters"], document["snapshot"]]
    return all(Path(f["path"]).stat().st_size == f["bytes"] for f in files)


def test_a_snapshot_in_place_with_no_manifest_naming_it_is_refused_in_one_line(
        store_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    previous = _finished_night(store_config, tmp_path)
    night2 = tmp_path / "night2"
    assert main(_night(store_config, night2, [0, 1, 4], "--previous", str(previous),
                       "--snapshot", str(night2 / "all.jsonl"))) == 0
    for manifest in night2.glob("*.manifest.json"):  # as a kill before the manifests
        manifest.unlink()
    capsys.readouterr()
    assert main(_night(store_config, tmp_path / "night3", [0], "--previous",
                       str(night2 / "all.jsonl"))) == 2
    err = capsys.readouterr().err
    assert "is not the output of a finished run" in err and len(err.splitlines()) == 1


def test_a_night_whose_results_manifest_names_its_snapshot_is_taken(
        store_config: Path, tmp_path: Path) -> None:
    """A kill between the two manifests (every file was in place), or a night of an earlier
    version, which wrote only the results' manifest."""
    previous = _finished_night(store_config, tmp_path)
    night2 = tmp_path / "night2"
    assert main(_night(store_config, night2, [0, 1, 4], "--previous", str(previous),
                       "--snapshot", str(night2 / "all.jsonl"))) == 0
    (night2 / "all.jsonl.manifest.json").unlink()
    assert main(_night(store_config, tmp_path / "night3", [0], "--previous",
                       str(night2 / "all.jsonl"))) == 0


@pytest.mark.parametrize("damage", ["truncated", "not_utf8", "not_results", "replaced"])
def test_a_previous_that_is_not_what_its_run_left_is_one_line(
        store_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        damage: str) -> None:
    previous = _finished_night(store_config, tmp_path)
    data = previous.read_bytes()
    changed = {"truncated": data[: len(data) // 2], "not_utf8": b"\xff\xfe" + data[2:],
               "not_results": b'{"id": "q0", "vector": [1, 0]}\n',
               "replaced": data.replace(b'"q0"', b'"q9"')}[damage]
    previous.write_bytes(changed)
    capsys.readouterr()
    assert main(_night(store_config, tmp_path / "night2", [0], "--previous",
                       str(previous))) == 2
    err = capsys.readouterr().err
    assert "--previous" in err and "Traceback" not in err and len(err.splitlines()) == 1


def test_a_parquet_previous_of_another_schema_is_one_line(
        store_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "other.parquet"
    pq.write_table(pa.table({"x": [1, 2]}), other)
    assert main(_night(store_config, tmp_path / "night2", [0], "--previous", str(other))) == 2
    err = capsys.readouterr().err
    assert "is not the output of a finished run" in err and "Traceback" not in err


def test_the_changed_only_output_of_a_chained_run_is_refused_as_previous(
        store_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    previous = _finished_night(store_config, tmp_path)
    night2 = tmp_path / "night2"
    assert main(_night(store_config, night2, [0, 5], "--previous", str(previous),
                       "--snapshot", str(night2 / "all.jsonl"))) == 0
    capsys.readouterr()
    assert main(_night(store_config, tmp_path / "night3", [0], "--previous",
                       str(night2 / "changed.jsonl"))) == 2
    assert "pass that run's --snapshot" in capsys.readouterr().err


def test_a_link_to_a_finished_snapshot_is_taken(store_config: Path, tmp_path: Path) -> None:
    previous = _finished_night(store_config, tmp_path)
    latest = tmp_path / "latest.jsonl"
    latest.symlink_to(previous)
    assert main(_night(store_config, tmp_path / "night2", [0], "--previous", str(latest))) == 0


def test_an_empty_previous_is_the_first_night(store_config: Path, tmp_path: Path) -> None:
    empty = tmp_path / "none.jsonl"
    empty.write_text("")
    night = tmp_path / "night1"
    assert main(_night(store_config, night, [0, 1], "--previous", str(empty),
                       "--snapshot", str(night / "all.jsonl"))) == 0
    assert len((night / "changed.jsonl").read_text().splitlines()) == 2


@pytest.mark.parametrize("flag", ["--previous", "--snapshot", "--config", "--queries"])
def test_a_summary_over_another_file_of_the_run_is_refused(
        store_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        flag: str) -> None:
    previous, argv = _chained_night(store_config, tmp_path)
    night = tmp_path / "night2"
    target = {"--previous": str(previous), "--snapshot": str(night / "all.jsonl"),
              "--config": str(store_config), "--queries": str(night / "q.jsonl")}[flag]
    link = tmp_path / "link.json"
    link.symlink_to(target)
    before = Path(target).read_bytes() if Path(target).exists() else None
    capsys.readouterr()
    assert main([*argv, "--summary", str(link)]) == 2
    assert "is the same file as" in capsys.readouterr().err
    assert (Path(target).read_bytes() if Path(target).exists() else None) == before


def test_an_output_over_a_manifest_of_the_run_is_refused(
        store_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    night = tmp_path / "night1"
    argv = _night(store_config, night, [0])
    assert main([*argv, "--dead-letter", str(night / "changed.jsonl.manifest.json")]) == 2
    assert "is the same file as" in capsys.readouterr().err


def test_a_score_that_moved_by_exactly_the_tolerance_as_written_is_unchanged() -> None:
    moved = [(0.123456, 0.123457), (0.5, 0.500001), (0.999999, 1.0), (0.700001, 0.7)]
    assert all(same_score(a, b) for a, b in moved)
    assert not any(same_score(a, b) for a, b in [(0.123456, 0.1234571), (0.5, 0.5000011),
                                                 (float("nan"), 0.5), (float("inf"), 1.0)])


@pytest.mark.parametrize("flag", ["--out", "--snapshot", "--dead-letter", "--summary"])
def test_an_output_named_as_compressed_is_refused(
        store_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        flag: str) -> None:
    _, argv = _chained_night(store_config, tmp_path)
    capsys.readouterr()
    assert main([*argv, flag, str(tmp_path / "night2" / "x.jsonl.gz")]) == 2
    assert "is named as a compressed file" in capsys.readouterr().err


def test_a_crash_exits_3_never_a_code_a_scheduler_reads_as_done_or_refused(
        store_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    def full_disk(*_: object, **__: object) -> None:  # as the disk filling during the merge
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("pipeline.io.single_file_sink._merge_parts", full_disk)
    night = tmp_path / "night1"
    capsys.readouterr()
    assert main(_night(store_config, night, [0, 1])) == 3
    err = capsys.readouterr().err
    assert "rag-evidence: crashed: " in err and "No space left on device" in err
    assert not Path(f"{night / 'changed.jsonl'}.manifest.json").exists()
