"""The candidate chain is written once: the run's Beam steps, `explain`, the README's diagram and
the Architecture page's all follow `pipeline.run.chain`, so a stage added there is a step of the
run and of `explain`."""

from __future__ import annotations

import json
import re
from functools import partial
from pathlib import Path

import apache_beam as beam
import pytest

from pipeline.cli.main import main
from pipeline.config.loader import load_settings
from pipeline.run import chain
from pipeline.run.evidence_transform import EvidenceTransform
from stages.models import Query
from tests.builders import FailingEmbedder, chunk_records, embedded_store, unit_vectors
from tests.pipeline.run.toy_step import ODD_DROPPED, even_step

ROOT = Path(__file__).resolve().parents[3]
EVERY_STEP = ["rag.recall.mode=hybrid", "rag.min-score=0.1"]


def _labels(tmp_path: Path, *overrides: str) -> list[str]:
    """The labels of the steps directly under the evidence transform, in the order applied."""
    settings = load_settings(overrides=[*overrides, "embedder.dim=8"])
    port = embedded_store(tmp_path / "store", chunk_records(unit_vectors(4, dim=8), 2))
    pipeline = beam.Pipeline()
    _ = (pipeline | beam.Create([Query(id="q", text="words")])
         | "Evidence" >> EvidenceTransform(settings, port_factory=port,
                                           embedder_factory=partial(FailingEmbedder, 8)))
    found = []
    for transform in pipeline.transforms_stack[0].parts:
        if transform.full_label == "Evidence":
            found = [part.full_label.removeprefix("Evidence/") for part in transform.parts]
    return found


def test_the_runs_steps_are_labelled_by_the_chains_class_names(tmp_path: Path) -> None:
    settings = load_settings(overrides=EVERY_STEP)
    names = chain.step_names(settings.rag)
    assert names == ["EmbedQueries", "Recall", "IdentityNormalize", "RrfFusion", "KeyedDedup",
                     "PerDocCap", "ScoreFloor", "TopN", "FetchContent", "Project"]
    labels = _labels(tmp_path, *EVERY_STEP)
    assert [label for label in labels if label in names[1:]] == names[1:]


@pytest.mark.parametrize("page", ["README.md", "docs/architecture.md"])
def test_the_documented_diagrams_name_the_chain_in_order(page: str) -> None:
    diagram = (ROOT / page).read_text(encoding="utf-8").split("```")[1]
    names = chain.step_names(load_settings(overrides=EVERY_STEP).rag)[1:]
    assert [word for word in re.findall(r"[A-Z][A-Za-z]+", diagram) if word in names] == names


def test_a_step_added_with_one_entry_is_in_the_run_both_explains_and_the_funnel(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The walk-through: a step is its module (`toy_step`) and one entry in the chain."""
    entries = list(chain.CANDIDATE_STEPS)
    entries.insert(3, chain.ChainEntry("EvenChunks", lambda rag: even_step()))
    monkeypatch.setattr(chain, "CANDIDATE_STEPS", tuple(entries))
    assert "EvenChunks" in _labels(tmp_path)
    store = tmp_path / "store"
    common = ["--set", f"search.embedded.path={store}", "--set", "embedder.dim=8",
              "--set", "rag.max-chunks-per-document=4", "--set", "rag.return-n=8"]
    # run: the step drops odd chunks, counts them, and the manifest names it
    queries, out = tmp_path / "q.jsonl", tmp_path / "out.jsonl"
    vectors = unit_vectors(1, dim=8, seed=7)
    queries.write_text(json.dumps({"id": "q", "vector": vectors[0].tolist()}) + "\n")
    assert main(["run", "--queries", str(queries), "--out", str(out), "--summary",
                 str(tmp_path / "summary.json"), *common]) == 0
    (result,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert result["evidence"] and all(b["chunk_index"] % 2 == 0 for b in result["evidence"])
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["counts"][ODD_DROPPED] > 0
    manifest = json.loads(Path(f"{out}.manifest.json").read_text())
    assert {"step": "EvenChunks"} in manifest["chain"]
    # explain, as JSON: its rows under its field; as text: its table under its title
    capsys.readouterr()
    assert main(["explain", "--query", "words", "--json", *common]) == 0
    explained = json.loads(capsys.readouterr().out)
    assert explained["odd_chunks"]
    assert all(int(row["evidence_key"].rsplit("-", 1)[1]) % 2 == 1
               for row in explained["odd_chunks"])
    assert main(["explain", "--query", "words", *common]) == 0
    assert re.search(r"^removed for an odd chunk index \([1-9]", capsys.readouterr().out,
                     re.MULTILINE)
    # the step saw the query: this text keeps every chunk
    assert main(["explain", "--query", "keep all", "--json", *common]) == 0
    assert json.loads(capsys.readouterr().out)["odd_chunks"] == []
    # eval's funnel: a column of its own, where a relevant odd chunk is lost
    odd = next(row["evidence_key"] for row in explained["odd_chunks"])
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text(f"q 0 {odd} 1\n")
    assert main(["eval", "--queries", str(queries), "--qrels", str(qrels), *common]) == 0
    report = capsys.readouterr().out
    funnel = report[report.index("loss funnel"):].splitlines()
    columns, counts = funnel[1].split(), funnel[3].split()
    assert columns[columns.index("PerDocCap") + 1] == "EvenChunks"
    assert counts[columns.index("PerDocCap")] == "1" and counts[columns.index("EvenChunks")] == "0"


def test_the_steps_page_describes_every_step_of_the_chain_in_order() -> None:
    section = (ROOT / "docs/steps.md").read_text(encoding="utf-8").split(
        "## Post-processing")[1].split("\n## ")[0]
    described = [name for name in re.findall(r"^- \*\*(\w+)\*\*", section, re.MULTILINE)
                 if name != "Project"]
    assert described == chain.every_step_name()
