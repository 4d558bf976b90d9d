"""One mechanism for a failing element, in `run` and `index` alike: every step that can fail
is a `GuardedDoFn` applied by `guarded_step`; no step wraps itself in Beam's
`with_exception_handling` (which would send its failures to another tag, in another shape)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_no_step_uses_beams_exception_wrapper() -> None:
    users = [str(path.relative_to(ROOT)) for package in ("pipeline", "stages", "connectors")
             for path in (ROOT / package).rglob("*.py")
             if ".with_exception_handling(" in path.read_text()]
    assert users == []


def test_ingestion_steps_are_guarded() -> None:
    from pipeline.ingest.transforms import ChunkDocuments, EmbedChunks, ParseChunkLines
    from stages.support.per_query import GuardedDoFn

    for step in (ChunkDocuments, EmbedChunks, ParseChunkLines):
        assert issubclass(step, GuardedDoFn), step.__name__
