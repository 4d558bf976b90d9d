"""`eval --plot FILE.png`: nDCG@k and Recall@k for k = 1..20, one line per config."""

from __future__ import annotations

from pathlib import Path

import matplotlib.image
import pytest

from pipeline.cli.main import main
from pipeline.eval.metrics import Scores
from pipeline.eval.plot import plot_curves, y_range
from pipeline.eval.runner import EvalRow


def _scores(ndcg: float, recall: float) -> Scores:
    return Scores(ndcg, recall, 0.5, 2.0, 0.5, 2, 2)


def test_the_plot_is_a_png_of_two_panels(tmp_path: Path) -> None:
    rows = [EvalRow(label, _scores(0.5, 0.5), 1.0, 0,
                    {k: _scores(min(1.0, k / 10 * gain), min(1.0, k / 8 * gain))
                     for k in range(1, 21)})
            for label, gain in (("dense", 1.0), ("hybrid", 1.3))]
    plot_curves(rows, tmp_path / "curves.png")
    data = (tmp_path / "curves.png").read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    height, width, _ = matplotlib.image.imread(str(tmp_path / "curves.png")).shape
    assert width > 2 * height > 600


def test_the_y_axis_starts_under_the_lowest_curve_not_at_0() -> None:
    rows = [EvalRow("a", _scores(0.8, 0.9), 1.0, 0, {1: _scores(0.83, 0.91), 2: _scores(0.9, 1)})]
    assert y_range(rows) == (0.75, 1.02)
    low = [EvalRow("b", _scores(0.1, 0.1), 1.0, 0, {1: _scores(0.02, 0.5)})]
    assert y_range(low) == (0.0, 1.02)


def test_eval_draws_one_line_per_config(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in {"json.md": "Parse JSON text into objects.",
                       "csv.md": "Read CSV rows as dictionaries.",
                       "heapq.md": "Push and pop items of a heap."}.items():
        (docs / name).write_text(text)
    queries, qrels = tmp_path / "q.jsonl", tmp_path / "qrels.tsv"
    queries.write_text('{"id": "a", "text": "parse json text"}\n'
                       '{"id": "b", "text": "read csv rows"}\n')
    qrels.write_text("a 0 json.md 1\nb 0 csv.md 1\n")
    plot = tmp_path / "curves.png"
    assert main(["eval", "--docs", str(docs), "--queries", str(queries), "--qrels", str(qrels),
                 "--plot", str(plot), "--set", f"search.embedded.path={tmp_path / 'store'}"]
                ) == 0
    assert f"plot: {plot}" in capsys.readouterr().out
    assert plot.read_bytes().startswith(b"\x89PNG")
