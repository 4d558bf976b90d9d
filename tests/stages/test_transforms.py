"""Each stage's Beam transform, on the DirectRunner."""

from __future__ import annotations

import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from pipeline.testing import query_hits
from stages.models import QueryCandidates
from stages.projection import ProjectionBudget
from stages.steps.dedup import keyed_dedup
from stages.steps.per_doc_cap import per_doc_cap
from stages.steps.top_n import top_n_step
from stages.support.candidate_stage import CandidateStage
from stages.transforms.identity import IdentityNormalize
from stages.transforms.projection import Project
from tests.builders import chunk, recalled


def _keys(element: QueryCandidates) -> tuple[str, list[str]]:
    return element.query_id, [c.evidence_key for c in element.candidates]


def _assert_stage_gives(
    stage: beam.PTransform,
    elements: list[QueryCandidates],  # type: ignore[type-arg]
    expected: list[tuple[str, list[str]]],
) -> None:
    with TestPipeline() as p:
        out = p | beam.Create(elements) | stage | beam.Map(_keys)
        assert_that(out, equal_to(expected))


def _query(qid: str, *cands: object) -> QueryCandidates:
    return QueryCandidates(query_id=qid, candidates=tuple(cands))  # type: ignore[arg-type]


def test_identity_normalize_transform() -> None:
    hits = query_hits("q", (recalled("v1", docId="d", chunkIndex=3), recalled("v2")))
    with TestPipeline() as p:
        out = p | beam.Create([hits]) | IdentityNormalize() | beam.Map(_keys)
        assert_that(out, equal_to([("q", ["d#chunk-3", "vector:v2"])]))


def test_keyed_dedup_transform_works_per_query() -> None:
    _assert_stage_gives(
        CandidateStage(keyed_dedup()),
        [
            _query("q1", chunk("d", 0, 0.9), chunk("d", 0, 0.8)),
            _query("q2", chunk("d", 0, 0.5), chunk("d", 1, 0.4)),
        ],
        [("q1", ["d#chunk-0"]), ("q2", ["d#chunk-0", "d#chunk-1"])],
    )


def test_per_doc_cap_transform() -> None:
    _assert_stage_gives(
        CandidateStage(per_doc_cap(2)),
        [_query("q", *(chunk("d", i, 1 - i / 10) for i in range(4)))],
        [("q", ["d#chunk-0", "d#chunk-1"])],
    )


def test_top_n_transform() -> None:
    _assert_stage_gives(
        CandidateStage(top_n_step(1)), [_query("q", chunk("a", 0, 0.1), chunk("b", 0, 0.7))],
        [("q", ["b#chunk-0"])]
    )


def test_project_transform_ranks_evidence_and_projects_chunk_scoped_ids() -> None:
    element = _query("q", chunk("a", 0, 0.2, source="a.md"), chunk("a", 1, 0.9, source="a.md"))
    with TestPipeline() as p:
        out = (
            p
            | beam.Create([element])
            | Project(ProjectionBudget())
            | beam.Map(
                lambda r: (
                    [(b.rank, b.evidence_key) for b in r.evidence],
                    [i.document_id for i in r.projected],
                )
            )
        )
        assert_that(
            out, equal_to([([(1, "a#chunk-1"), (2, "a#chunk-0")], ["a#chunk-1", "a#chunk-0"])])
        )
