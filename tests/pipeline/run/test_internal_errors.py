"""Anything unexpected raised for some queries makes them dead letters of stage `internal`."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms.error_handling import CollectingErrorHandler

from connectors.embedder_port import EmbedderInfo
from connectors.search_port import SearchOutcome, SearchRequest
from pipeline.config.loader import load_settings
from pipeline.run.job import run_job
from stages.candidate_step import CandidateStep
from stages.models import Candidate, DeadLetter, QueryCandidates
from stages.support.candidate_stage import CandidateStage
from stages.support.internal_errors import InternalDeadLetters, guarded_step
from stages.support.per_query import GuardedDoFn
from tests.builders import chunk


class BrokenPort:
    """A port whose backend has a bug: every search raises something unexpected."""

    dimension = 4
    embedder: EmbedderInfo | None = None

    def search(self, requests: Sequence[SearchRequest]) -> list[SearchOutcome]:
        raise RuntimeError("backend bug")

    def close(self) -> None:
        return None


def open_broken_port() -> BrokenPort:
    return BrokenPort()


def test_an_unexpected_error_in_recall_dead_letters_its_batch_and_the_run_ends(
        tmp_path: Path) -> None:
    queries = tmp_path / "q.jsonl"
    queries.write_text("".join(json.dumps({"id": f"q{i}", "vector": [1.0, 0.0, 0.0, 0.0]})
                               + "\n" for i in range(3)) + "not json\n")
    dead = tmp_path / "dead.jsonl"
    summary = run_job(load_settings(), queries_path=str(queries),
                      out_path=str(tmp_path / "out.jsonl"), dead_letter_path=str(dead),
                      port_factory=open_broken_port)
    letters = [json.loads(line) for line in dead.read_text().splitlines()]
    internal = sorted((d["query_id"], d["line_number"]) for d in letters
                      if d["stage"] == "internal")
    assert internal == [("q0", 1), ("q1", 2), ("q2", 3)]
    assert all("RuntimeError('backend bug')" in d["error"] for d in letters
               if d["stage"] == "internal")
    assert summary.balanced and summary.counts["internal_errors"] == 3


def _explode_on_b(candidates: Sequence[Candidate]) -> list[Candidate]:
    if any(c.doc_id == "b" for c in candidates):
        raise ValueError("stage bug")
    return list(candidates)


def test_a_stage_that_raises_for_one_query_dead_letters_that_query_only() -> None:
    elements = [QueryCandidates(query_id="ok", candidates=(chunk("a", 0, 0.9),)),
                QueryCandidates(query_id="bad", candidates=(chunk("b", 0, 0.9),))]
    with TestPipeline() as p:
        handler = CollectingErrorHandler()
        kept = p | beam.Create(elements) | CandidateStage(CandidateStep("Explode", _explode_on_b)) \
            .with_error_handler(handler)
        handler.close()
        letters = handler.output() | InternalDeadLetters()
        assert_that(kept | beam.Map(lambda q: q.query_id), equal_to(["ok"]), label="kept")
        assert_that(letters | beam.Map(lambda d: (d.stage, d.query_id, "stage bug" in d.error)),
                    equal_to([("internal", "bad", True)]), label="letters")


def test_without_an_error_handler_a_stage_that_raises_fails_the_pipeline() -> None:
    elements = [QueryCandidates(query_id="bad", candidates=(chunk("b", 0, 0.9),))]
    with pytest.raises(ValueError, match="stage bug"), TestPipeline() as p:
        _ = p | beam.Create(elements) | CandidateStage(CandidateStep("Explode", _explode_on_b))


class _YieldsThenRaises(GuardedDoFn):
    """A step whose `answers` is a generator: it raises only once its outputs are read."""

    def answers(self, batch: list[str]) -> Iterator[str | DeadLetter]:
        for query_id in batch:
            if query_id == "bad":
                raise ValueError("bug half-way")
            yield query_id


def test_a_step_that_raises_half_way_through_its_outputs_fails_its_element_only() -> None:
    with TestPipeline() as p:
        handler = CollectingErrorHandler()
        outputs = guarded_step(p | beam.Create([["a", "b"], ["c", "bad", "d"]]), "Step",
                            _YieldsThenRaises(), handler)
        handler.close()
        letters = handler.output() | InternalDeadLetters()
        # nothing of the failed element comes out: its queries are dead letters, not halves
        assert_that(outputs.main, equal_to(["a", "b"]), label="kept")
        assert_that(letters | beam.Map(lambda d: "bug half-way" in d.error),
                    equal_to([True, True, True]), label="letters")
