"""The pass over the query ids of a run that keeps or continues state, by shard.

Each query id hashes into one of a fixed number of shards (`shard_of`, recorded in the state).
The pass gives one element per shard, whatever the number of queries: the shard's ids, their
input lines and the digest of each raw record (a JSON line's bytes, or a Parquet row's
canonical JSON). A record whose digest is the one PREV's state holds for its id is the same
query, recognised without parsing it (see `shard_continuation`).
"""

from __future__ import annotations

import zlib
from array import array
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

import apache_beam as beam
from apache_beam import pvalue

from pipeline.io.query_ids import DIGEST_BYTES, usable_id
from pipeline.run.repeated_ids import IdLine, first_lines_of_repeated

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


IdRow = tuple[str, int, bytes]


class _IdsOfShard(beam.CombineFn):
    """(id, line, digest)s of one shard -> its `ShardIds` (None inputs add nothing: they make
    every shard appear, queries or not)."""

    def create_accumulator(self) -> ShardIds:
        return no_ids()

    def add_input(self, seen: ShardIds, row: IdRow | None) -> ShardIds:
        if row is not None:
            seen.ids.append(row[0])
            seen.lines.append(row[1])
            seen.digests.extend(row[2])
        return seen

    def merge_accumulators(self, accumulators: Iterable[ShardIds]) -> ShardIds:
        merged = no_ids()
        for more in accumulators:
            merged.ids.extend(more.ids)
            merged.lines.extend(more.lines)
            merged.digests.extend(more.digests)
        return merged

    def extract_output(self, seen: ShardIds) -> ShardIds:
        return seen


DigestRecord = tuple[int, Any, bytes | None]
"""(line or row number, the id as read, the record's digest): see `QuerySource.read_digests`."""


def sharded_id(record: DigestRecord, shards: int
               ) -> Iterator[tuple[int, IdRow] | pvalue.TaggedOutput]:
    """(shard, (id, line, digest)) of a record that holds a usable id; the line number of
    any other to `NO_ID` (the parse pass letters it)."""
    number, found, digest = record
    query_id = usable_id(found)
    if query_id is None or digest is None:
        yield pvalue.TaggedOutput(NO_ID, number)
    else:
        yield shard_of(query_id, shards), (query_id, number, digest)


def repeated_of(shard: tuple[int, ShardIds]) -> Iterator[IdLine]:
    yield from shard[1].repeated().items()


class ShardedIds(NamedTuple):
    shards: beam.PCollection[tuple[int, ShardIds]]
    no_id: beam.PCollection[int]


class ShardedQueryIds(beam.PTransform[beam.PCollection[DigestRecord], ShardedIds]):
    """Digest records (see `QuerySource.read_digests`) -> (shard, ShardIds) for every shard
    in `range(shards)` (`shards`), and the line numbers of the records without a usable id
    (`no_id`).

    Usage::

        ids = records | ShardedQueryIds(128)
        ids.shards, ids.no_id
    """

    def __init__(self, shards: int) -> None:
        super().__init__()
        self._shards = shards

    def expand(self, records: beam.PCollection[DigestRecord]) -> ShardedIds:
        found = records | "ShardIds" >> beam.FlatMap(sharded_id, self._shards).with_outputs(
            NO_ID, main="rows")
        every = (records.pipeline
                 | "EveryShard" >> beam.Create([(k, None) for k in range(self._shards)]))
        shards = ((found.rows, every)
                  | "WithEveryShard" >> beam.Flatten()
                  | "IdsOfShard" >> beam.CombinePerKey(_IdsOfShard()))
        return ShardedIds(shards, found[NO_ID])
