"""The fourth hostile round's lost files and crashes: every command checks what it reads and
writes before any work, in one line and exit 2, and never writes over or empties a user's
file or folder."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from pipeline.cli.main import main
from tests.pipeline.cli_runs import vector_run


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def judged(tmp_path: Path) -> dict[str, Path]:
    """An eval's inputs: queries, qrels and a config (of a store that does not exist: every
    case here must stop before the evaluation would open it)."""
    queries = tmp_path / "queries.jsonl"
    queries.write_text(json.dumps({"id": "q1", "text": "json"}) + "\n")
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("q1 0 json.md 1\n")
    config = tmp_path / "config.yaml"
    config.write_text(f"search:\n  embedded:\n    path: {tmp_path / 'no-store'}\n")
    return {"queries": queries, "qrels": qrels, "config": config}


def _eval(files: dict[str, Path], *extra: str) -> list[str]:
    return ["eval", "--queries", str(files["queries"]), "--qrels", str(files["qrels"]),
            "--config", str(files["config"]), *extra]


@pytest.mark.parametrize(("flag", "over"), [
    ("--json", "qrels"), ("--losses", "queries"), ("--losses", "config"),
    ("--plot", "config"), ("--json", "queries")])
def test_an_eval_output_over_one_of_its_inputs_is_refused_and_the_input_kept(
        judged: dict[str, Path], flag: str, over: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    before = {name: _digest(path) for name, path in judged.items()}
    assert main(_eval(judged, flag, str(judged[over]))) == 2
    assert "is the same file as" in capsys.readouterr().err
    assert {name: _digest(path) for name, path in judged.items()} == before


def test_an_eval_plot_and_json_into_one_file_are_refused_before_writing_either(
        judged: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    both = tmp_path / "report.png"
    assert main(_eval(judged, "--plot", str(both), "--json", str(both))) == 2
    assert "is the same file as --json" in capsys.readouterr().err
    assert not both.exists()


@pytest.mark.parametrize("name", ["curves.txt", "curves", "curves.jsonl"])
def test_an_eval_plot_that_cannot_be_drawn_is_refused_before_the_evaluation(
        judged: dict[str, Path], tmp_path: Path, name: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_eval(judged, "--plot", str(tmp_path / name))) == 2
    error = capsys.readouterr().err
    assert "--plot" in error and ".png" in error
    assert not (tmp_path / name).exists()


@pytest.mark.parametrize("k", ["0", "-1"])
def test_an_eval_cut_off_below_one_is_refused(judged: dict[str, Path], k: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_eval(judged, "--k", k)) == 2
    assert "--k" in capsys.readouterr().err


@pytest.mark.parametrize(("make", "says"), [
    (lambda p: None, "does not exist"),
    (lambda p: p.mkdir(), "is a folder"),
    (lambda p: p.write_bytes("q1 0 caf\xe9.md 1\n".encode("latin-1")), "is not UTF-8"),
    (lambda p: p.write_text("q1 0 a.md high\n"), "whole number"),
    (lambda p: p.write_text("q1 0 a.md 0.5\n"), "whole number"),
    (lambda p: p.write_text('{"query_id": "q1", "id": "a.md", "relevance": 0.5}\n'),
     "whole number"),
    (lambda p: p.write_text('{"query_id": "q1", "id": "a.md", "relevance": -1}\n'),
     "whole number"),
    (lambda p: p.write_text('{"query_id": "q1", "id": "a.md", "relevance": true}\n'),
     "whole number"),
])
def test_qrels_that_cannot_be_read_as_judgments_are_one_line(
        judged: dict[str, Path], tmp_path: Path, make, says: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    qrels = tmp_path / "bad-qrels"
    make(qrels)
    assert main(_eval({**judged, "qrels": qrels})) == 2
    error = capsys.readouterr().err
    assert says in error and "Traceback" not in error


@pytest.mark.parametrize(("flag", "value", "named"), [
    ("--max-dead-letters", "", "--max-dead-letters"),  # was taken as no limit at all
    ("--max-dead-letters", "101%", "--max-dead-letters"),
    ("--max-wall-time", "soon", "job.max-wall-time"),
    ("--max-wall-time", "", "job.max-wall-time")])
def test_a_run_value_that_does_not_parse_is_refused_before_anything_is_written(
        store_config: Path, tmp_path: Path, flag: str, value: str, named: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    argv, out = vector_run(store_config, tmp_path, flag, value)
    assert main(argv) == 2
    assert named in capsys.readouterr().err
    assert not out.exists()


def _night(config: Path, tmp_path: Path) -> tuple[list[str], Path]:
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": "q", "vector": [1.0] * 8}) + "\n")
    previous = tmp_path / "prev.jsonl"
    previous.write_text("")
    snapshot = tmp_path / "all.jsonl"
    return (["run", "--config", str(config), "--queries", str(queries), "--out",
             str(tmp_path / "changed.jsonl"), "--previous", str(previous), "--snapshot",
             str(snapshot)], snapshot)


def test_a_state_folder_holding_a_users_files_is_refused_and_kept(
        store_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv, snapshot = _night(store_config, tmp_path)
    state = Path(f"{snapshot}.state")
    state.mkdir()
    (state / "notes.txt").write_text("my notes")
    (state / "queries.parquet").write_text("my queries")
    assert main(argv) == 2
    assert "holds files that rag-evidence did not write" in capsys.readouterr().err
    assert (state / "notes.txt").read_text() == "my notes"
    assert (state / "queries.parquet").read_text() == "my queries"
    assert not snapshot.exists()


def test_a_state_path_that_is_a_file_is_refused_and_kept(
        store_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv, snapshot = _night(store_config, tmp_path)
    state = Path(f"{snapshot}.state")
    state.write_text("mine")
    assert main(argv) == 2
    assert "is a file, not a folder" in capsys.readouterr().err
    assert state.read_text() == "mine"


def test_a_state_folder_of_an_earlier_night_is_replaced(
        store_config: Path, tmp_path: Path) -> None:
    argv, snapshot = _night(store_config, tmp_path)
    assert main(argv) == 0
    state = Path(f"{snapshot}.state")
    (state / "queries.arrow.tmp-99999").write_text("a killed writer's leftover")
    (state / "queries.arrow.parts-host-99999-0123abcd").mkdir()  # a killed run's parts
    (state / ".queries.arrow.lock").write_text("")
    (state / "queries.parquet").write_text("an earlier format's queries")
    assert main(argv) == 0
    assert sorted(p.name for p in state.iterdir()) == [
        "chunks.arrow", "queries.arrow", "state.json"]


def test_a_demo_workdir_holding_a_users_files_is_refused_and_kept(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "queries.jsonl").write_text("my queries")
    assert main(["demo", "--workdir", str(work)]) == 2
    assert "holds files that rag-evidence did not write" in capsys.readouterr().err
    assert [p.name for p in work.iterdir()] == ["queries.jsonl"]
    assert (work / "queries.jsonl").read_text() == "my queries"


def test_a_corpus_into_a_users_folder_or_a_file_is_refused_and_kept(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mine = tmp_path / "notes"
    mine.mkdir()
    (mine / "json.md").write_text("my own notes on json")
    assert main(["corpus", str(mine)]) == 2
    assert (mine / "json.md").read_text() == "my own notes on json"
    a_file = tmp_path / "file.md"
    a_file.write_text("mine")
    assert main(["corpus", str(a_file)]) == 2
    assert a_file.read_text() == "mine"
    assert "is a file, not a folder" in capsys.readouterr().err


def test_a_corpus_is_written_again_into_its_own_folder(tmp_path: Path) -> None:
    folder = tmp_path / "corpus"
    assert main(["corpus", str(folder)]) == 0
    written = sorted(p.name for p in folder.iterdir())
    assert main(["corpus", str(folder)]) == 0
    assert sorted(p.name for p in folder.iterdir()) == written


def test_a_corpus_into_a_folder_yet_to_be_made_makes_it(tmp_path: Path) -> None:
    folder = tmp_path / "a" / "b"
    assert main(["corpus", str(folder)]) == 0
    assert (folder / "json.md").is_file()


@pytest.mark.slow  # the whole demo, twice
def test_a_demo_workdir_yet_to_be_made_is_made_and_used_again(tmp_path: Path) -> None:
    work = tmp_path / "new" / "work"
    assert main(["demo", "--workdir", str(work)]) == 0
    assert main(["demo", "--workdir", str(work)]) == 0
    assert (work / "evidence.jsonl").is_file() and (work / "docs" / "json.md").is_file()
