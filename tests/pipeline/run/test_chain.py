"""The candidate chain is written once: the run's Beam steps, `explain`, the README's diagram and
the Architecture page's all follow `pipeline.run.chain`, so a stage added there is a step of the
run and of `explain`."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import partial
from pathlib import Path

import apache_beam as beam
import pytest

from pipeline.cli.main import main
from pipeline.config.loader import load_settings
from pipeline.run import chain
from pipeline.run.evidence_transform import EvidenceTransform
from stages.candidate_step import CandidateStep
from stages.models import Candidate, Query
from tests.builders import FailingEmbedder, chunk_records, embedded_store, unit_vectors

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


def _even(candidates: Sequence[Candidate]) -> list[Candidate]:
    return [c for c in candidates if (c.chunk_index or 0) % 2 == 0]


def test_a_stage_added_to_the_chain_is_a_step_of_the_run_and_of_explain(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    steps = list(chain.CANDIDATE_STEPS)
    # a stage a newcomer adds, between PerDocCap and ScoreFloor: drops the odd chunks
    steps.insert(3, lambda rag: CandidateStep("_DropOddChunks", _even))
    monkeypatch.setattr(chain, "CANDIDATE_STEPS", tuple(steps))
    assert "_DropOddChunks" in _labels(tmp_path)
    store = ["--set", f"search.embedded.path={tmp_path / 'store'}", "--set", "embedder.dim=8",
             "--set", "rag.max-chunks-per-document=4"]
    capsys.readouterr()
    assert main(["explain", "--query", "words", "--json", *store]) == 0
    explained = json.loads(capsys.readouterr().out)
    assert {row["evidence_key"] for row in explained["dropped_by"]["_DropOddChunks"]}
    assert all(int(row["evidence_key"].rsplit("-", 1)[1]) % 2 == 0 for row in explained["kept"])
