"""The pass over the query ids of a run that keeps or continues state, by shard.

Each query id hashes into one of a fixed number of shards (`shard_of`, recorded in the state).
The pass gives each step that needs them one element per shard, whatever the number of
queries: the shard's ids, their input lines and the digest of each raw record (a JSON line's
bytes, or a Parquet row's columns). A run that keeps state writes them as part files by shard
(`shard_parts`), which each such step reads a shard at a time; one that keeps none combines
them in memory. A record whose digest is the one PREV's state holds for its id is the same
query, recognised without parsing it (see `shard_continuation`).
"""

from __future__ import annotations

import zlib
from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple

import apache_beam as beam
import pyarrow as pa
from apache_beam import pvalue
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from pipeline.io.query_ids import DIGEST_BYTES, usable_id
from pipeline.run.repeated_ids import IdLine, first_lines_of_repeated
from pipeline.run.shard_parts import PartIndex, batches_of_shard, write_shard_batches

NO_ID = "no_id"
"""The tag of the line numbers of records that hold no usable id (the parse pass letters
them)."""
QUERIES_PER_SHARD = 1000
"""How many queries a shard holds when a first night chooses the number of shards: a shard
is a few MB of state, which every runner moves as one element."""
MAX_SHARDS = 1 << 16


def shard_count(queries: int) -> int:
    """How many shards a state of about `queries` queries is split into."""
    return max(1, min(MAX_SHARDS, -(-queries // QUERIES_PER_SHARD)))


def shard_of(query_id: str, shards: int) -> int:
    """The shard of `query_id`: a CRC of its UTF-8 bytes (the same on every worker; `hash` is
    salted per process)."""
    return zlib.crc32(query_id.encode("utf-8", "surrogatepass")) % shards


class ShardIds(NamedTuple):
    """One shard's queries in input order: ids, line numbers, and record digests
    (`DIGEST_BYTES` each, concatenated)."""

    ids: list[str]
    lines: array
    digests: bytearray

    def digest(self, at: int) -> bytes:
        return bytes(self.digests[at * DIGEST_BYTES:(at + 1) * DIGEST_BYTES])

    def repeated(self) -> dict[str, int]:
        """Each id that more than one line holds, with its first line."""
        return first_lines_of_repeated(self.ids, self.lines)


def no_ids() -> ShardIds:
    return ShardIds([], array("q"), bytearray())


def merged(pieces: Iterable[ShardIds]) -> ShardIds:
    """One `ShardIds` of `pieces`, in their order."""
    whole = no_ids()
    for piece in pieces:
        whole.ids.extend(piece.ids)
        whole.lines.extend(piece.lines)
        whole.digests.extend(piece.digests)
    return whole


class _IdsOfShard(beam.CombineFn):
    """`ShardIds` pieces of one shard -> its `ShardIds` (None inputs add nothing: they make
    every shard appear, queries or not)."""

    def create_accumulator(self) -> list[ShardIds]:
        return []

    def add_input(self, pieces: list[ShardIds], piece: ShardIds | None) -> list[ShardIds]:
        if piece is not None:
            pieces.append(piece)
        return pieces

    def merge_accumulators(self, accumulators: Iterable[list[ShardIds]]) -> list[ShardIds]:
        return [piece for pieces in accumulators for piece in pieces]

    def extract_output(self, pieces: list[ShardIds]) -> ShardIds:
        # in input order where each piece holds lines in order and pieces do not interleave
        # (a bundle reads a block of lines): the same on every runner
        return merged(sorted(pieces, key=lambda piece: piece.lines[0]))


DigestRecord = tuple[int, Any, bytes | None]
"""(line or row number, the id as read, the record's digest): see `QuerySource.read_digests`,
which gives them one at a time or in blocks (lists)."""

GATHERED_ROWS = 100_000
"""How many rows `_GatherShards` holds before it gives them on: a few MB."""

IDS_SCHEMA = pa.schema([("id", pa.string()), ("line", pa.int64()),
                        ("digest", pa.binary(DIGEST_BYTES))])
"""A part file's batch of one shard's ids (see `shard_parts`)."""


class _GatherShards(beam.DoFn):
    """Digest records -> the ids of the bundle's records that hold a usable id, by shard,
    given at the bundle's end (or every `GATHERED_ROWS` rows): with `parts_dir`, as a part
    file of one batch per shard (its `PartIndex`), else as (shard, ShardIds) pieces, one per
    shard. Either way one element per shard or part, not per query. The line number of any
    other record to `NO_ID` (the parse pass letters it)."""

    def __init__(self, shards: int, parts_dir: str | None) -> None:
        self._shards, self._dir = shards, parts_dir

    def start_bundle(self) -> None:
        self._pieces: dict[int, ShardIds] = {}
        self._held = 0

    def process(self, records: DigestRecord | list[DigestRecord]) -> Iterator[Any]:
        for number, found, digest in records if isinstance(records, list) else (records,):
            query_id = usable_id(found)
            if query_id is None or digest is None:
                yield pvalue.TaggedOutput(NO_ID, number)
                continue
            shard = shard_of(query_id, self._shards)
            piece = self._pieces.get(shard)
            if piece is None:
                piece = self._pieces[shard] = no_ids()
            piece.ids.append(query_id)
            piece.lines.append(number)
            piece.digests.extend(digest)
            self._held += 1
        if self._held >= GATHERED_ROWS:
            yield from self._given()

    def finish_bundle(self) -> Iterator[WindowedValue]:
        for given in self._given():
            yield WindowedValue(given, MIN_TIMESTAMP, (GlobalWindow(),))

    def _given(self) -> Iterator[tuple[int, ShardIds] | PartIndex]:
        pieces, self._pieces, self._held = self._pieces, {}, 0
        if self._dir is None:
            yield from sorted(pieces.items())
        elif pieces:
            yield write_shard_batches(self._dir, "ids", IDS_SCHEMA, {
                shard: pa.table([pa.array(piece.ids, pa.string()),
                                 pa.array(piece.lines, pa.int64()),
                                 pa.FixedSizeBinaryArray.from_buffers(
                                     pa.binary(DIGEST_BYTES), len(piece.ids),
                                     [None, pa.py_buffer(bytes(piece.digests))])],
                                schema=IDS_SCHEMA)
                for shard, piece in pieces.items()})


def ids_of_shard(parts: Sequence[PartIndex], shard: int) -> ShardIds:
    """Shard `shard`'s ids, read from the parts of the ids pass, in input order (see
    `_IdsOfShard.extract_output`)."""
    pieces = []
    for batch in batches_of_shard(parts, shard):
        if batch.num_rows:
            pieces.append(ShardIds(batch.column(0).to_pylist(),
                                   array("q", batch.column(1).to_pylist()),
                                   bytearray(b"".join(batch.column(2).to_pylist()))))
    return merged(sorted(pieces, key=lambda piece: piece.lines[0]))


def _with_ids(shard: int, parts: Sequence[PartIndex]) -> tuple[int, ShardIds]:
    return shard, ids_of_shard(parts, shard)


def repeated_of(shard: tuple[int, ShardIds]) -> Iterator[IdLine]:
    yield from shard[1].repeated().items()


class ShardedIds:
    """The ids pass's outcome: (shard, ShardIds) of every shard (`every_shard`), and the line
    numbers of the records without a usable id (`no_id`)."""

    def __init__(self, shards: int, no_id: beam.PCollection[int],
                 combined: beam.PCollection[tuple[int, ShardIds]] | None = None,
                 parts: beam.PCollection[PartIndex] | None = None) -> None:
        self._shards, self.no_id = shards, no_id
        self._combined, self._parts = combined, parts

    def every_shard(self, label: str) -> beam.PCollection[tuple[int, ShardIds]]:
        """(shard, ShardIds) of every shard, for one step (`label` names it). From part files,
        each step reads its own, a shard at a time: on the local runner, a collection that
        two steps read is held whole in memory until the second has run."""
        if self._combined is not None:
            return self._combined
        assert self._parts is not None
        return (self._parts.pipeline
                | f"ShardsFor{label}" >> beam.Create(list(range(self._shards)))
                | f"IdsFor{label}" >> beam.Map(_with_ids, beam.pvalue.AsList(self._parts)))


class ShardedQueryIds(beam.PTransform[beam.PCollection[DigestRecord], ShardedIds]):
    """Digest records (see `QuerySource.read_digests`) -> `ShardedIds`: the ids of every
    shard in `range(shards)` (`shards`), written as part files into `parts_dir` when given
    (the folder the run's state parts go to: see `shard_parts`), else combined in memory.

    Usage::

        ids = records | ShardedQueryIds(128, parts_dir)
        ids.every_shard("Continue"), ids.no_id
    """

    def __init__(self, shards: int, parts_dir: str | None = None) -> None:
        super().__init__()
        self._shards, self._dir = shards, parts_dir

    def expand(self, records: beam.PCollection[DigestRecord]) -> ShardedIds:
        found = records | "ShardIds" >> beam.ParDo(
            _GatherShards(self._shards, self._dir)).with_outputs(NO_ID, main="rows")
        if self._dir is not None:
            return ShardedIds(self._shards, found[NO_ID], parts=found.rows)
        every = (records.pipeline
                 | "EveryShard" >> beam.Create([(k, None) for k in range(self._shards)]))
        shards = ((found.rows, every)
                  | "WithEveryShard" >> beam.Flatten()
                  | "IdsOfShard" >> beam.CombinePerKey(_IdsOfShard()))
        return ShardedIds(self._shards, found[NO_ID], combined=shards)
