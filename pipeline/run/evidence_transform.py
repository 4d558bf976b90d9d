"""The evidence pipeline as one composite transform: Query -> QueryResult (+ dead letters)."""

from __future__ import annotations

from typing import NamedTuple

import apache_beam as beam

from connectors.embedder_port import EmbedderFactory
from connectors.search_port import PortFactory
from core.errors import RagEvidenceError
from pipeline.config.backends import embedder_tag
from pipeline.config.settings import Settings
from pipeline.run.chain import FETCH_CONTENT, candidate_chain, planned, sees_query
from stages.continuation import PREVIOUS, RECALL, UNCHANGED, Continue, RaisedBound
from stages.embed import not_embedded
from stages.models import (
    Continuation,
    DeadLetter,
    EmbeddedQuery,
    Query,
    QueryHits,
    QueryResult,
    QueryState,
    RawResult,
)
from stages.support.candidate_stage import CandidateStage
from stages.support.internal_errors import HandlesErrors
from stages.support.shared_embedder import SharedEmbedder
from stages.transforms.embed import EmbedQueries
from stages.transforms.fetch_content import FetchContent, FetchVectors
from stages.transforms.identity import IdentityNormalize
from stages.transforms.projection import Project
from stages.transforms.recall import STATE, Recall


class EvidenceOutputs(NamedTuple):
    results: beam.PCollection[QueryResult]
    dead_letters: beam.PCollection[DeadLetter]
    states: tuple[beam.PCollection[QueryState], ...] = ()
    """With `keeps_state`: what each query keeps for the next run (apart by the step that
    gives it: a merge of them would hold them all on the local runner)."""
    unchanged: beam.PCollection[RawResult] | None = None
    """With `continues`: the previous results that stand (not in `results`), raw."""
    previous: beam.PCollection[RawResult] | None = None
    """With `continues`: the previous results of the continued queries that did not stand."""
    moved: beam.PCollection[QueryResult] | None = None
    """With `continues.hits`: the results of the queries that moved there, answered by a
    chain of their own and apart from `results` (a merge of the two would hold them all on
    the local runner)."""


class ContinueFrom(NamedTuple):
    """The queries continued from PREV's state, and the store's changes since (ids); `hits`
    of queries continued elsewhere that moved (answered apart: `EvidenceOutputs.moved`), and
    their queries to `recall` in full."""

    continued: beam.PCollection[Continuation]
    removed: frozenset[str]
    entered: tuple[str, ...]
    hits: beam.PCollection[QueryHits] | None = None
    recall: beam.PCollection[EmbeddedQuery] | None = None
    raised: RaisedBound | None = None
    """How tonight's BM25 statistics raise a kept BM25 list's bound (lexical, hybrid)."""


class EvidenceTransform(HandlesErrors, beam.PTransform[beam.PCollection[Query], EvidenceOutputs]):
    """Embed -> Recall -> IdentityNormalize -> the candidate chain (see `chain.CANDIDATE_STEPS`:
    [RrfFusion] -> KeyedDedup -> PerDocCap [-> ScoreFloor] [-> Mmr] [-> Rerank] -> TopN) ->
    FetchContent -> Project. FetchContent reads the contents of the blocks that survived, from
    a port that answered without them (the embedded store); before the first step that needs
    contents (Rerank) when there is one, and FetchVectors before the first that needs vectors.

    Element-wise per query (no shuffle), so it runs on bounded and unbounded input alike.

    With `keeps_state`, it also outputs what each query keeps for the next run (`state`);
    `continues` adds the queries continued from PREV's state (see `stages.continuation`):
    their hits join the others' at IdentityNormalize, those that ran out are recalled with the
    others, and the previous results that stand come out apart (`unchanged`), as do the
    previous results of the others (`previous`), to compare the new ones with.

    Usage::

        outputs = queries | EvidenceTransform(
            settings, port_factory=open_port, embedder_factory=open_embedder)
        outputs.results, outputs.dead_letters
    """

    def __init__(self, settings: Settings, *, port_factory: PortFactory,
                 embedder_factory: EmbedderFactory,
                 embedder_refusal: RagEvidenceError | None = None,
                 keeps_state: bool = False, continues: ContinueFrom | None = None) -> None:
        super().__init__()
        self._settings = settings
        self._keeps_state = keeps_state
        self._continues = continues
        self._port_factory = port_factory
        self._embedder = SharedEmbedder(embedder_factory, embedder_tag(settings),
                                       settings.embedder.model)
        self._refusal = embedder_refusal
        self._chain = candidate_chain(settings.rag)

    def expand(self, queries: beam.PCollection[Query]) -> EvidenceOutputs:
        rag, mode, handler = self._settings.rag, self._settings.rag.recall.mode, self._error_handler
        dead_letters = []
        if mode == "lexical":
            to_recall = queries | "NothingToEmbed" >> beam.Map(not_embedded).with_output_types(
                EmbeddedQuery)
        else:
            embedded = queries | "Embed" >> EmbedQueries(
                self._embedder, batch_size=self._settings.embedder.batch_size,
                refusal=None if self._refusal is None else str(self._refusal)
            ).with_error_handler(handler)
            to_recall = embedded.queries
            dead_letters.append(embedded.dead_letter)
        continued = None
        if self._continues is not None:
            continued = self._continues.continued | "Continue" >> Continue(
                self._port_factory, removed=self._continues.removed,
                entered=self._continues.entered, retrieve_k=rag.retrieve_k,
                batch_size=self._settings.search.batch_size,
                max_sub_queries=rag.max_sub_queries, mode=mode,
                raised=self._continues.raised).with_error_handler(handler)
            recall = [continued[RECALL], *([self._continues.recall]
                                            if self._continues.recall is not None else [])]
            to_recall = (to_recall, *recall) | "AlsoRecall" >> beam.Flatten()
            dead_letters.append(continued.dead_letter)
        recalled = to_recall | "Recall" >> Recall(
            self._port_factory, retrieve_k=rag.retrieve_k,
            batch_size=self._settings.search.batch_size, mode=mode,
            max_sub_queries=rag.max_sub_queries, keeps_state=self._keeps_state,
            with_query=sees_query(self._chain)).with_error_handler(handler)
        hits = recalled.hits
        if continued is not None:
            hits = (hits, continued.hits) | "AllHits" >> beam.Flatten()
        results, answer_dead = self._answered(hits, "")
        dead_letters += [recalled.dead_letter, *answer_dead]
        moved = None
        if self._continues is not None and self._continues.hits is not None:
            moved, moved_dead = self._answered(self._continues.hits, "Moved")
            dead_letters += moved_dead
        states: tuple[beam.PCollection[QueryState], ...] = ()
        if self._keeps_state:
            states = (recalled[STATE], *([continued[STATE]] if continued is not None else []))
        return EvidenceOutputs(
            results, tuple(dead_letters) | "EvidenceDeadLetters" >> beam.Flatten(), states,
            None if continued is None else continued[UNCHANGED],
            None if continued is None else continued[PREVIOUS], moved)

    def _answered(self, hits: beam.PCollection[QueryHits], prefix: str
                  ) -> tuple[beam.PCollection[QueryResult], list[beam.PCollection[DeadLetter]]]:
        """IdentityNormalize -> the candidate chain, with FetchContent (and FetchVectors) where
        `chain.planned` puts them -> Project, each step labelled by its name after `prefix`."""
        handler = self._error_handler
        candidates = hits | f"{prefix}IdentityNormalize" >> IdentityNormalize(
            ).with_error_handler(handler)
        dead_letters = []
        for step in planned(self._chain):
            if isinstance(step, str):
                read = (FetchContent if step == FETCH_CONTENT else FetchVectors)(
                    self._port_factory)
                fetched = candidates | f"{prefix}{step}" >> read.with_error_handler(handler)
                candidates = fetched.candidates
                dead_letters.append(fetched.dead_letter)
            else:
                candidates = candidates | f"{prefix}{step.name}" >> CandidateStage(
                    step).with_error_handler(handler)
        results = candidates | f"{prefix}Project" >> Project(
            self._settings.projection).with_error_handler(handler)
        return results, dead_letters
