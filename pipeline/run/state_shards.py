"""A run's state as shards: `queries.arrow` in the state folder is an Arrow IPC file with one
record batch per shard (batch K holds the queries whose id is in shard K), so that the next
run reads one shard at a time, as one element, and never the whole state.

A row is one query: its id, the digest of its input record, its fingerprint, what it searches
with (text, filters, and each sub-query's vector beside its kept list) and its result line as
the snapshot holds it. A row without lists is a result without state (answered in full next
time, and compared with).

The state is written without holding it: the run's state and result rows stream into part
files, each a few shard-sorted batches at a time; one step per shard then gathers its rows
from every part (`CompactShards`), and one last step writes the shards in order into the file.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import apache_beam as beam
import numpy as np
import pyarrow as pa
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from pipeline.io.json_lines import loads_json_line, shared_json_line, to_json_line
from pipeline.run.changed_only import changed_results
from pipeline.run.query_shards import ShardIds, shard_of
from pipeline.run.shard_parts import PartIndex, batches_of_shard, write_shard_batches
from stages.models import EmbeddedQuery, Query, QueryResult, QueryState, RawResult, RecalledList
from stages.sub_queries import resolve_sub_queries
from stages.support import counters

LIST_TYPE = pa.struct([("reason", pa.string()), ("vector", pa.list_(pa.float32())),
                       ("exact", pa.list_(pa.float64())),
                       ("ids", pa.list_(pa.string())), ("scores", pa.list_(pa.float64())),
                       ("bound", pa.float64())])
"""A kept list: its sub-query's vector in float32 (`exact` holds it in float64 when float32
would round it), its ids and scores, best first, and its bound."""
STATE_SCHEMA = pa.schema([
    ("shard", pa.int32()), ("query_id", pa.string()), ("digest", pa.binary()),
    ("fingerprint", pa.string()), ("text", pa.string()), ("filters", pa.string()),
    ("lists", pa.list_(LIST_TYPE)), ("result", pa.binary())])
BUFFERED_ROWS = 4096
"""Rows a part writer holds before it writes them, one batch per shard."""
_TEXT_REASON = "knn:text"
_VECTORS_REASON = "knn:vectors["


def bm25_lists(flat: pa.StructArray) -> np.ndarray:
    """Of kept lists (`flat`, as the state holds them), which are BM25 lists: those kept
    without a vector."""
    return np.asarray(flat.field("vector").is_null().to_numpy(zero_copy_only=False),
                      dtype=bool)


def state_row(state: QueryState, shards: int) -> dict[str, Any] | None:
    """A query's state as a part row (no digest or result: those join it per shard); None
    for a state that holds no query to search with again."""
    query = state.query
    if query is None:
        return None
    # every sub-query a state's lists may name (hybrid's are dense's and lexical's): a row
    # keeps the vectors of the kNN ones
    subs = resolve_sub_queries(EmbeddedQuery(query, state.text_vector), "hybrid",
                               len(state.lists))
    if not isinstance(subs, list):
        return None
    vectors = {s.reason: s.vector for s in subs}
    return {"shard": shard_of(state.query_id, shards), "query_id": state.query_id,
            "fingerprint": state.fingerprint, "text": query.text,
            "filters": json.dumps(query.filters, sort_keys=True, ensure_ascii=False),
            "lists": [{"reason": k.reason, **_vector_columns(vectors.get(k.reason)),
                       "ids": k.ids, "scores": k.scores, "bound": k.bound}
                      for k in state.lists]}


def _vector_columns(vector: tuple[float, ...] | None) -> dict[str, Any]:
    if vector is None:
        return {"vector": None, "exact": None}
    values = np.asarray(vector, dtype=np.float64)
    rounded = values.astype(np.float32)
    exact = None if np.array_equal(rounded.astype(np.float64), values) else vector
    return {"vector": rounded, "exact": exact}


def result_row(result: QueryResult | RawResult, shards: int) -> dict[str, Any]:
    """A result as a part row: the JSON line the snapshot holds (a raw result is one)."""
    if isinstance(result, QueryResult):
        query_id, line = result.query_id, shared_json_line(result).encode("utf-8")
    elif isinstance(result, bytes):
        query_id, line = loads_json_line(result)["query_id"], result
    else:
        line = to_json_line(QueryResult.model_validate(result)).encode("utf-8")
        query_id = result["query_id"]
    return {"shard": shard_of(query_id, shards), "query_id": query_id, "result": line}


def query_of(query_id: str, text: str | None, filters: str | None,
             vectors_by_reason: Sequence[tuple[str, tuple[float, ...]]],
             line_number: int | None) -> tuple[Query, tuple[float, ...] | None]:
    """The query a state row searches with, and its text's vector: rebuilt as the run that
    kept it parsed it (values are stored exactly)."""
    vector, vectors, text_vector = None, [], None
    for reason, values in vectors_by_reason:
        if reason == "knn:vector":
            vector = values
        elif reason.startswith(_VECTORS_REASON):
            vectors.append(values)
        elif reason == _TEXT_REASON:
            text_vector = values
    query = Query.model_construct(id=query_id, text=text, vector=vector,
                                  vectors=tuple(vectors) or None,
                                  filters=json.loads(filters or "{}"))
    query._line_number = line_number
    return query, text_vector


def with_lists(rows: pa.Table, lists: Sequence[Sequence[RecalledList]]) -> pa.Table:
    """State rows with their kept lists replaced by `lists` (row by row, the same sub-queries
    in the same order, as a continuation keeps them): each sub-query's vector is kept as the
    row holds it, not rebuilt from the query."""
    old = one_array(rows.column("lists"))
    per_row = np.diff(starting_at_zero(old.offsets))
    if per_row.tolist() != [len(kept) for kept in lists]:
        raise ValueError("with_lists: each row needs one list per sub-query it holds")
    vector, exact = (old.flatten().flatten()[LIST_TYPE.get_field_index(name)]
                     for name in ("vector", "exact"))
    flat = [kept for row in lists for kept in row]
    fields = [pa.array([k.reason for k in flat], pa.string()), vector, exact,
              pa.array([k.ids for k in flat], pa.list_(pa.string())),
              pa.array([k.scores for k in flat], pa.list_(pa.float64())),
              pa.array([k.bound for k in flat], pa.float64())]
    offsets = pa.array(np.concatenate([[0], np.cumsum(per_row)]).astype(np.int32))
    column = pa.ListArray.from_arrays(offsets, pa.StructArray.from_arrays(
        fields, fields=list(LIST_TYPE)), type=STATE_SCHEMA.field("lists").type)
    return rows.set_column(STATE_SCHEMA.get_field_index("lists"), STATE_SCHEMA.field("lists"),
                           column)


def one_array(column: pa.ChunkedArray) -> pa.Array:
    """A column as one array: its only chunk as it is (`combine_chunks` copies even one)."""
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


def starting_at_zero(offsets: pa.Array) -> np.ndarray:
    """A list array's offsets from 0, whatever slice of a larger array it is."""
    values = np.asarray(offsets.to_numpy(zero_copy_only=False), dtype=np.int64)
    return values - values[0] if len(values) else values


def states_of(table: pa.Table, lines: Sequence[int | None]) -> list[QueryState]:
    """State rows (each with lists) as the `QueryState`s continuations start from, column by
    column; `lines` are the queries' input lines tonight."""
    if not table.num_rows:
        return []
    table = table.combine_chunks()
    query_ids = table.column("query_id").to_pylist()
    fingerprints = table.column("fingerprint").to_pylist()
    texts = table.column("text").to_pylist()
    filters = table.column("filters").to_pylist()
    lists = table.column("lists").chunk(0)
    per_query = np.diff(starting_at_zero(lists.offsets))
    flat = lists.flatten()
    reasons = flat.field("reason").to_pylist()
    bounds = flat.field("bound").to_numpy(zero_copy_only=False).tolist()
    ids, scores, vectors = flat.field("ids"), flat.field("scores"), flat.field("vector")
    id_values, id_at = ids.flatten().to_pylist(), starting_at_zero(ids.offsets).tolist()
    score_values = scores.flatten().to_numpy(zero_copy_only=False)
    score_at = starting_at_zero(scores.offsets).tolist()
    vector_values = vectors.flatten().to_numpy(zero_copy_only=False).astype(np.float64)
    vector_at = starting_at_zero(vectors.offsets).tolist()
    exact = flat.field("exact").to_pylist() if flat.field("exact").null_count < len(flat) \
        else [None] * len(flat)
    states: list[QueryState] = []
    j = 0
    for row, count in enumerate(per_query.tolist()):
        kept, by_reason = [], []
        for k in range(j, j + count):
            kept.append(RecalledList(reasons[k], tuple(id_values[id_at[k]:id_at[k + 1]]),
                                     tuple(score_values[score_at[k]:score_at[k + 1]].tolist()),
                                     bounds[k]))
            vector = exact[k]
            if vector is None:
                vector = vector_values[vector_at[k]:vector_at[k + 1]].tolist()
            by_reason.append((reasons[k], tuple(vector)))
        j += count
        query, text_vector = query_of(query_ids[row], texts[row], filters[row], by_reason,
                                      lines[row])
        states.append(QueryState(query_ids[row], fingerprints[row], text_vector, tuple(kept),
                                 query))
    return states


class StateFile:
    """PREV's `queries.arrow`, read a shard at a time (plain reads: a memory map would make
    every shard read resident in this process)."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._reader: pa.ipc.RecordBatchFileReader | None = None

    def shard(self, shard: int) -> pa.RecordBatch:
        if self._reader is None:
            self._reader = pa.ipc.open_file(pa.OSFile(self._path))
        return self._reader.get_batch(shard)

    def close(self) -> None:
        self._reader = None


# -- writing --------------------------------------------------------------------------------



class KeptRows(NamedTuple):
    """A shard's rows that stand: PREV's rows `rows` (int64 row numbers of PREV's batch of
    the shard, as bytes) and the complete rows of the file `path` ("": none)."""

    shard: int
    rows: bytes
    path: str


class ShardRows(NamedTuple):
    """A shard of the new state, compacted: PREV's rows `rows` (as `KeptRows.rows`) and the
    rows of the files `paths`, in order."""

    shard: int
    rows: bytes
    paths: tuple[str, ...]


def _table(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=STATE_SCHEMA)


class _WriteShardParts(beam.DoFn):
    """Rows -> part files of single-shard batches; emits each part with its batches' shards.
    A retried bundle's part is never listed (see `single_file_sink`)."""

    def __init__(self, parts_dir: str) -> None:
        self._dir = parts_dir

    def start_bundle(self) -> None:
        self._buffered: dict[int, list[dict[str, Any]]] = {}
        self._count = 0
        self._writer: pa.ipc.RecordBatchFileWriter | None = None
        self._shards: list[int] = []
        self._path = ""

    def process(self, row: dict[str, Any] | None) -> None:
        if row is None:
            return
        self._buffered.setdefault(row["shard"], []).append(row)
        self._count += 1
        if self._count >= BUFFERED_ROWS:
            self._flush()

    def _flush(self) -> None:
        if self._writer is None:
            Path(self._dir).mkdir(parents=True, exist_ok=True)
            self._path = os.path.join(self._dir, f"part-{uuid.uuid4().hex}")
            self._writer = pa.ipc.new_file(self._path, STATE_SCHEMA)
        for shard in sorted(self._buffered):
            for batch in _table(self._buffered[shard]).combine_chunks().to_batches():
                self._writer.write_batch(batch)
                self._shards.append(shard)
        self._buffered, self._count = {}, 0

    def finish_bundle(self) -> Iterator[WindowedValue]:
        if self._count:
            self._flush()
        if self._writer is not None:
            self._writer.close()
            index = np.asarray(self._shards, dtype=np.int32).tobytes()
            yield WindowedValue((self._path, index), MIN_TIMESTAMP, (GlobalWindow(),))


def write_shard_parts(rows: beam.PCollection[dict[str, Any] | None], label: str,
                      parts_dir: str) -> beam.PCollection[PartIndex]:
    return rows | label >> beam.ParDo(_WriteShardParts(parts_dir))


def compacted(shard: int, ids: ShardIds, kept: set[str], states: list[pa.RecordBatch],
              results: list[pa.RecordBatch]) -> pa.Table:
    """Shard `shard`'s new rows of the new state, beside those that stand (`kept`, by id): a
    row for each other query with a result, its state (none for a repeated id) with its
    record's digest."""
    repeated = ids.repeated()
    digest = {query_id: ids.digest(at) for at, query_id in enumerate(ids.ids)
              if query_id not in repeated}
    result_table = pa.Table.from_batches(results, STATE_SCHEMA)
    result_of = dict(zip(result_table.column("query_id").to_pylist(),
                         result_table.column("result").to_pylist(), strict=True))
    done = set(kept)
    state_table = pa.Table.from_batches(states, STATE_SCHEMA)
    taken: list[int] = []
    for at, query_id in enumerate(state_table.column("query_id").to_pylist()):
        if query_id in digest and query_id in result_of and query_id not in done:
            taken.append(at)
            done.add(query_id)
    with_state = state_table.take(np.asarray(taken, np.int64))
    taken_ids = with_state.column("query_id").to_pylist()
    with_state = with_state.set_column(
        STATE_SCHEMA.get_field_index("digest"), STATE_SCHEMA.field("digest"),
        pa.array([digest[q] for q in taken_ids], pa.binary()))
    with_state = with_state.set_column(
        STATE_SCHEMA.get_field_index("result"), STATE_SCHEMA.field("result"),
        pa.array([result_of[q] for q in taken_ids], pa.binary()))
    only_results = _table([{"shard": shard, "query_id": q, "result": line}
                           for q, line in result_of.items() if q not in done])
    return pa.concat_tables([with_state, only_results])


COMPACTED = "compacted"
"""The tag of each shard's `ShardRows`."""
GONE = "gone"
"""The tag of the ids of tonight's queries that have a previous result and no new one."""


class _CompactShard(beam.DoFn):
    """(shard, ShardIds) -> `ShardRows` of its new state (tag `COMPACTED`): the rows that stand
    and a file of the others; with `compare_with` (PREV's state file), also the run's new
    results that differ from PREV's, counted. PREV's rows that stand are only named here:
    the merge copies them once."""

    def __init__(self, parts_dir: str, compare_with: str | None) -> None:
        self._dir, self._compare_with = parts_dir, compare_with
        self._previous: StateFile | None = None
        self._kept: tuple[list[KeptRows], dict[int, KeptRows]] | None = None

    def process(self, element: tuple[int, ShardIds], state_parts: list[PartIndex],
                new_parts: list[PartIndex], copied_parts: list[PartIndex],
                kept: list[KeptRows]) -> Iterator[Any]:
        shard, ids = element
        standing = self._kept_of(kept).get(shard, KeptRows(shard, b"", ""))
        kept_ids: set[str] = set()
        if standing.rows:
            kept_ids.update(self._previous_batch(shard).column("query_id").take(
                np.frombuffer(standing.rows, dtype=np.int64)).to_pylist())
        if standing.path:
            with pa.memory_map(standing.path) as source:
                kept_ids.update(pa.ipc.open_file(source).read_all().column(
                    "query_id").to_pylist())
        new = batches_of_shard(new_parts, shard)
        copied = batches_of_shard(copied_parts, shard)
        table = compacted(shard, ids, kept_ids, batches_of_shard(state_parts, shard),
                          new + copied)
        paths = tuple(p for p in (standing.path,) if p)
        if table.num_rows:
            path = os.path.join(self._dir, f"shard-{shard:06d}-{uuid.uuid4().hex}")
            with pa.ipc.new_file(path, STATE_SCHEMA) as writer:
                writer.write_table(table)
            paths += (path,)
        yield beam.pvalue.TaggedOutput(COMPACTED, ShardRows(shard, standing.rows, paths))
        if self._compare_with is None:
            return
        new_lines = _lines_of(new)
        previous_ids, previous = self._previous_lines(shard, new_lines)
        yield from changed_results(new_lines, previous)
        answered = set(new_lines) | set(_lines_of(copied)) | kept_ids
        for query_id in set(ids.ids) - answered:
            if query_id in previous_ids:  # its query is a dead letter tonight
                counters.count(counters.PREVIOUS_GONE)
                yield beam.pvalue.TaggedOutput(GONE, query_id)

    def _kept_of(self, kept: list[KeptRows]) -> dict[int, KeptRows]:
        """`kept` by shard, made once per side input (a scan per shard would cost shards²)."""
        if self._kept is None or self._kept[0] is not kept:
            self._kept = (kept, {k.shard: k for k in kept})
        return self._kept[1]

    def _previous_batch(self, shard: int) -> pa.RecordBatch:
        if self._previous is None:
            assert self._compare_with, "rows that stand name PREV's state"
            self._previous = StateFile(self._compare_with)
        return self._previous.shard(shard)

    def _previous_lines(self, shard: int, wanted: Mapping[str, bytes]
                        ) -> tuple[set[str], dict[str, bytes]]:
        """PREV's ids of the shard, and its result lines of the `wanted` ids."""
        if not self._compare_with:
            return set(), {}
        batch = self._previous_batch(shard)
        ids = batch.column(STATE_SCHEMA.get_field_index("query_id")).to_pylist()
        rows = [at for at, query_id in enumerate(ids) if query_id in wanted]
        lines = batch.column(STATE_SCHEMA.get_field_index("result")).take(
            pa.array(rows, pa.int64())).to_pylist()
        return set(ids), dict(zip([ids[at] for at in rows], lines, strict=True))


def _lines_of(batches: list[pa.RecordBatch]) -> dict[str, bytes]:
    table = pa.Table.from_batches(batches, STATE_SCHEMA)
    return dict(zip(table.column("query_id").to_pylist(), table.column("result").to_pylist(),
                    strict=True))


def write_states(parts_dir: str, shard: int, rows: pa.Table) -> PartIndex:
    """Writes one shard's state rows (their results join them later) as a part of their
    own (one batch, as its index says)."""
    return write_shard_batches(parts_dir, "part", STATE_SCHEMA, {shard: rows})


def write_kept(parts_dir: str, shard: int, kept: pa.Table) -> str:
    """Writes a shard's rows that stand as PREV held them; returns the file."""
    Path(parts_dir).mkdir(parents=True, exist_ok=True)
    path = os.path.join(parts_dir, f"kept-{shard:06d}-{uuid.uuid4().hex}")
    with pa.ipc.new_file(path, STATE_SCHEMA) as writer:
        writer.write_table(kept)
    return path


def _merge_shards(_impulse: bytes, compacted_parts: list[ShardRows], path: str,
                  parts_dir: str, shards: int, previous: str | None) -> str:
    """Writes every shard, in order, as one batch of the state file (renamed into place): the
    rows of PREV's state (`previous`) that stand, then its files' rows; removes the parts."""
    by_shard = {part.shard: part for part in compacted_parts}
    if sorted(by_shard) != list(range(shards)):
        raise RuntimeError(f"the state's shards are incomplete: {len(by_shard)} of {shards}")
    state = None if previous is None else StateFile(previous)
    Path(parts_dir).mkdir(parents=True, exist_ok=True)  # no part: no query had a result
    staged = os.path.join(parts_dir, "merged")
    with pa.ipc.new_file(staged, STATE_SCHEMA) as writer:
        for shard in range(shards):
            part = by_shard[shard]
            pieces = []
            if part.rows:
                assert state is not None, "rows that stand name PREV's state"
                pieces.append(pa.Table.from_batches([state.shard(shard)]).take(
                    np.frombuffer(part.rows, dtype=np.int64)))
            for file in part.paths:
                with pa.memory_map(file) as source:
                    pieces.append(pa.ipc.open_file(source).read_all())
            table = pa.concat_tables(pieces).combine_chunks() if pieces else _table([])
            batches = table.to_batches() or [pa.RecordBatch.from_pylist([], STATE_SCHEMA)]
            writer.write_batch(batches[0])
    os.replace(staged, path)
    for entry in Path(parts_dir).iterdir():
        entry.unlink()
    Path(parts_dir).rmdir()
    return path


class StateWrites(NamedTuple):
    written: beam.PCollection[str]
    """The state file, once written."""
    changed: beam.PCollection[QueryResult] | None = None
    """With `compare_with`: the new results whose evidence changed since PREV, or is new."""
    gone: beam.PCollection[str] | None = None
    """With `compare_with`: the ids of tonight's queries with a previous result and none
    tonight (a dead letter)."""


class WriteStateShards(beam.PTransform[beam.PCollection[tuple[int, ShardIds]], StateWrites]):
    """(shard, ShardIds) of every shard, with the run's `states`, its new `results` (from the
    chains, apart), the previous results `copied` as they stood, `kept` (the rows that stand,
    per shard: `KeptRows`) and `state_parts` (state parts written by other steps) ->
    the state file at `path`, whole once written. Each input is written as it comes (a merge
    of them would hold them all on the local runner).

    With `compare_with` (PREV's state file, when the run continues from it), each shard also
    gives its new results whose evidence changed (see `changed_only.changed_results`): they
    are compared where they are, and never cross a join.
    """

    def __init__(self, path: str, parts_dir: str, shards: int,
                 states: Sequence[beam.PCollection[QueryState]],
                 results: Sequence[beam.PCollection[QueryResult]],
                 copied: beam.PCollection[RawResult] | None = None,
                 kept: beam.PCollection[KeptRows] | None = None,
                 state_parts: beam.PCollection[PartIndex] | None = None,
                 compare_with: str | None = None) -> None:
        super().__init__()
        self._path, self._dir, self._shards = path, parts_dir, shards
        self._states, self._results, self._copied = states, results, copied
        self._kept, self._state_parts = kept, state_parts
        self._compare_with = compare_with

    def expand(self, shards: beam.PCollection[tuple[int, ShardIds]]) -> StateWrites:
        count, pipeline = self._shards, shards.pipeline
        state_parts = [
            write_shard_parts(states | f"StateRows{n}" >> beam.Map(state_row, count),
                              f"WriteStateParts{n}", self._dir)
            for n, states in enumerate(self._states)]
        if self._state_parts is not None:
            state_parts.append(self._state_parts)
        new_parts = _all(pipeline, [
            write_shard_parts(results | f"ResultRows{n or ''}" >> beam.Map(result_row, count),
                              f"WriteResultParts{n or ''}", self._dir)
            for n, results in enumerate(self._results)], "AllResultParts")
        copied_parts = [] if self._copied is None else [write_shard_parts(
            self._copied | "CopiedRows" >> beam.Map(result_row, count), "WriteCopiedParts",
            self._dir)]
        kept = self._kept if self._kept is not None else (
            pipeline | "NothingKept" >> beam.Create([]))
        compacted_parts = shards | "CompactShards" >> beam.ParDo(
            _CompactShard(self._dir, self._compare_with),
            beam.pvalue.AsList(_all(pipeline, state_parts, "AllStateParts")),
            beam.pvalue.AsList(new_parts),
            beam.pvalue.AsList(_all(pipeline, copied_parts, "AllCopiedParts")),
            beam.pvalue.AsList(kept)).with_outputs(COMPACTED, GONE, main="changed")
        written = (pipeline
                   | "OnceCompacted" >> beam.Impulse()
                   | "MergeShards" >> beam.Map(_merge_shards,
                                               beam.pvalue.AsList(compacted_parts[COMPACTED]),
                                               self._path, self._dir, count,
                                               self._compare_with))
        if self._compare_with is None:
            return StateWrites(written)
        return StateWrites(written, compacted_parts.changed, compacted_parts[GONE])


def _all(pipeline: beam.Pipeline, parts: list[beam.PCollection[PartIndex]], label: str
         ) -> beam.PCollection[PartIndex]:
    if not parts:
        return pipeline | f"No{label}" >> beam.Create([])
    if len(parts) == 1:
        return parts[0]
    return tuple(parts) | label >> beam.Flatten()
