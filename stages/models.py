"""The records that flow through the pipeline, one element per query.

Inputs and outputs (`Query`, `QueryResult`, `DeadLetter`) are pydantic models, validated where
they cross the edge; what flows between the steps in between is plain frozen data."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, NamedTuple, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    field_serializer,
    field_validator,
    model_validator,
)

from connectors.search_port import ChunkHit, ChunkHits, ContentRef, FilterValue
from core.input_limits import Vector, check_filters, check_text

_FROZEN = ConfigDict(frozen=True, extra="forbid")
_Model = TypeVar("_Model", bound=BaseModel)


def unvalidated(model: type[_Model], fields: dict[str, Any], fields_set: set[str] | None = None,
                private: dict[str, Any] | None = None) -> _Model:
    """A `model` holding `fields` (every field, in the model's order, each a value its
    validation would keep as it is), built without validation: for records made of our own
    values on the hot path, where validating them again costs more than the step that made
    them. `fields_set`: the fields given (default: all); `private`: private attributes."""
    record = model.__new__(model)
    object.__setattr__(record, "__dict__", fields)
    object.__setattr__(record, "__pydantic_fields_set__",
                       set(fields) if fields_set is None else fields_set)
    object.__setattr__(record, "__pydantic_extra__", None)
    object.__setattr__(record, "__pydantic_private__", private)
    return record



class Query(BaseModel):
    """One input query: text to embed, or one or more ready vectors, plus metadata filters.

    Raises pydantic's ValidationError (a ValueError) naming the field: no text and no vector,
    a vector outside the input limits, text that is not valid Unicode.

    >>> Query(id="q1", text="parse json", filters={"docId": ["json.md", "csv.md"]}).id
    'q1'
    """

    model_config = _FROZEN

    id: str = Field(min_length=1)
    text: str | None = None
    vector: Vector | None = None
    vectors: tuple[Vector, ...] | None = None
    filters: dict[str, FilterValue | list[FilterValue]] = Field(default_factory=dict)
    _line_number: int | None = PrivateAttr(default=None)

    @property
    def line_number(self) -> int | None:
        """The input line this query came from, when it came from a file."""
        return self._line_number

    @classmethod
    def of_line(cls, data: Any, line_number: int) -> Query:
        """`data` validated as a query read from input line `line_number`."""
        query = cls.model_validate(data)
        query._line_number = line_number  # a new object, not shared yet: no copy needed
        return query

    @classmethod
    def of_checked_vector(cls, query_id: str, vector: tuple[float, ...], line_number: int
                          ) -> Query:
        """The query `of_line` gives for `{"id": query_id, "vector": vector}` read from line
        `line_number`, built without pydantic's validation: the caller checked both as the
        validators do (`parse_query_line`, for the lines of a bulk run, where validation
        costs as much as reading the line; a test holds the two to the same queries)."""
        return unvalidated(cls, {"id": query_id, "text": None, "vector": vector,
                                 "vectors": None, "filters": {}}, {"id", "vector"},
                           {"_line_number": line_number})

    def from_line(self, line_number: int) -> Query:
        """This query, remembering its input line (not part of the query's JSON)."""
        copy = self.model_copy()
        copy._line_number = line_number
        return copy

    @field_validator("id", "text")
    @classmethod
    def _valid_unicode(cls, value: str | None) -> str | None:
        return None if value is None else check_text(value)

    @field_validator("filters")
    @classmethod
    def _filter_values_are_valid_unicode(cls, filters: dict[str, Any]) -> dict[str, Any]:
        check_filters(filters)
        for key, value in filters.items():
            check_text(key)
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, str):
                    check_text(item)
        return filters

    @field_validator("vectors")
    @classmethod
    def _vectors_are_present(
        cls, vectors: tuple[tuple[float, ...], ...] | None
    ) -> tuple[tuple[float, ...], ...] | None:
        if vectors is not None and not vectors:
            raise ValueError("must hold at least one vector when present")
        return vectors

    @model_validator(mode="after")
    def _has_something_to_search(self) -> Query:
        has_text = self.text is not None and self.text.strip() != ""
        if not has_text and self.vector is None and self.vectors is None:
            raise ValueError("a query needs a non-blank `text`, a `vector` or `vectors`")
        return self


class EmbeddedQuery(NamedTuple):
    """A query after the Embed step: its text's vector when it was embedded."""

    query: Query
    text_vector: tuple[float, ...] | None = None


class RecalledHit(NamedTuple):
    """A port hit, the sub-query that found it, its rank in that sub-query's list (from 1)
    and its position in recall order."""

    hit: ChunkHit
    reason: str
    recall_order: int
    rank: int = 1


class RetrieverHit(NamedTuple):
    """Where one retriever (a sub-query, named by its reason) ranked a chunk, and its raw
    score there (an object of the three in a result)."""

    reason: str
    rank: int
    score: float


class QueryHits(NamedTuple):
    """Everything recalled for one query, in recall order, as columns: each hit (see
    `ChunkHits`), the sub-query that found it (`reasons`) and its rank there (`ranks`, from
    1); a hit's position is its recall order."""

    query_id: str
    found: ChunkHits
    reasons: Sequence[str]
    ranks: Sequence[int]
    query: EmbeddedQuery | None = None
    """The query, when a step of the chain sees it (see `QueryCandidates`)."""

    @property
    def hits(self) -> tuple[RecalledHit, ...]:
        """The hits one by one."""
        return tuple(map(RecalledHit, self.found, self.reasons, range(len(self.reasons)),
                         self.ranks))


class ChunkEvidence(BaseModel):
    """What a result says of one chunk: its identity, content, score and who found it."""

    model_config = _FROZEN

    evidence_key: str
    doc_id: str | None
    chunk_index: int | None
    source: str
    content: str
    score: float
    hit_reasons: tuple[str, ...]
    retrievers: tuple[RetrieverHit, ...] = ()

    @field_serializer("retrievers")
    def _retrievers_as_objects(self, retrievers: tuple[RetrieverHit, ...]
                               ) -> list[dict[str, Any]]:
        return [r._asdict() for r in retrievers]


class Candidate(NamedTuple):
    """A recalled chunk with its identity resolved, between post-processing stages: plain
    data (a tuple), validated at the edges. `content` is None until it is read (`ref` says
    where), just before projection; its place in recall order breaks score ties."""

    evidence_key: str
    doc_id: str | None
    chunk_index: int | None
    source: str
    content: str | None
    score: float
    hit_reasons: tuple[str, ...]
    recall_order: int
    retrievers: tuple[RetrieverHit, ...] = ()
    ref: ContentRef | None = None
    hit_id: str | None = None
    """The store's id of the hit (None when it has none)."""
    vector: tuple[float, ...] | None = None
    """Its stored vector, unit: read (FetchVectors) only before a step that needs it."""


class QueryCandidates(NamedTuple):
    """One query's candidates between post-processing stages, and the query itself when a
    step of the chain sees it (`CandidateStep.needs_query`; None otherwise)."""

    query_id: str
    candidates: tuple[Candidate, ...]
    query: EmbeddedQuery | None = None


class EvidenceBlock(ChunkEvidence):
    """A ranked piece of evidence in the result."""

    rank: int = Field(ge=1)

    @classmethod
    def ranked(cls, candidate: Candidate, rank: int) -> EvidenceBlock:
        """`candidate` (its content read) as the block at `rank` (see `block_fields`)."""
        return cls.model_validate(block_fields(candidate, rank))


def block_fields(candidate: Candidate, rank: int) -> dict[str, Any]:
    """What the evidence block of `candidate` at `rank` holds.

    Raises:
        ValueError: the candidate's content was never read (FetchContent comes before
            Project).
    """
    if candidate.content is None:
        raise ValueError(f"the content of {candidate.evidence_key} was never read "
                         "(FetchContent comes before Project)")
    return {"evidence_key": candidate.evidence_key, "doc_id": candidate.doc_id,
            "chunk_index": candidate.chunk_index, "source": candidate.source,
            "content": candidate.content, "score": float(candidate.score),
            "hit_reasons": tuple(candidate.hit_reasons),
            "retrievers": tuple(candidate.retrievers), "rank": rank}


class ProjectedItem(BaseModel):
    """An Agent-facing evidence item; `document_id` is the chunk-scoped evidence key."""

    model_config = _FROZEN

    document_id: str
    source: str
    content: str
    score: float


class QueryResult(BaseModel):
    """The output for one query: ranked evidence and its Agent projection.

    >>> QueryResult(query_id="q1", evidence=(), projected=()).model_dump_json()
    '{"query_id":"q1","evidence":[],"projected":[]}'
    """

    model_config = _FROZEN

    query_id: str
    evidence: tuple[EvidenceBlock, ...]
    projected: tuple[ProjectedItem, ...]


DeadLetterStage = Literal["parse", "embed", "recall", "write", "internal"]


class DeadLetter(BaseModel):
    """An input that could not be turned into a result, with why and where (`stage` names the
    step: parse, embed, recall, write, or internal for anything unexpected).

    >>> DeadLetter(stage="parse", error="line is not JSON", line_number=3).stage
    'parse'
    """

    model_config = _FROZEN

    stage: DeadLetterStage
    error: str
    query_id: str | None = None
    line_number: int | None = None
    input: Any = None


class RecalledList(NamedTuple):
    """One sub-query's recalled chunks as a run keeps them for the next: ids and scores, best
    first, and `bound`: every chunk that matches and is not in the list scores at most this
    (-inf: the list holds every chunk that matches)."""

    reason: str
    ids: tuple[str, ...]
    scores: tuple[float, ...]
    bound: float


class QueryState(NamedTuple):
    """What a run keeps of one query for the next to continue from: the query's fingerprint,
    its text's vector (so that it is never embedded again), its recalled lists, and the query
    itself (what the next run searches with when it does not read the query's line again)."""

    query_id: str
    fingerprint: str
    text_vector: tuple[float, ...] | None
    lists: tuple[RecalledList, ...]
    query: Query | None = None


RawResult = bytes | dict[str, Any]
"""A result as a result file holds it: a JSON line, or a Parquet row (copied as it is when it
stands, parsed only to be compared)."""


class Continuation(NamedTuple):
    """A query whose previous state and result stand: its vector from the state, to be answered
    from the store's changes alone; `previous` is its result in PREV, raw."""

    embedded: EmbeddedQuery
    state: QueryState
    previous: RawResult

    @property
    def query(self) -> Query:
        return self.embedded.query


def dead_letter(query: Query, stage: DeadLetterStage, error: Exception) -> DeadLetter:
    """A dead letter for `query`, with its id, line number and parsed input."""
    return DeadLetter(stage=stage, error=str(error), query_id=query.id,
                      line_number=query.line_number, input=query.model_dump(exclude_none=True))
