"""Part files of rows by shard: each part holds one Arrow batch per shard it has rows of, and
is named with the shard of each batch (`PartIndex`), so that a step reads one shard's rows
from every part without reading the rest. A run writes them into a parts folder of its own
(see `state_files.StateFolder.parts`), which it removes once the state is merged."""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa

PartIndex = tuple[str, bytes]
"""A part file and the shard of each of its batches (int32s)."""


def write_shard_batches(parts_dir: str, prefix: str, schema: pa.Schema,
                        by_shard: Mapping[int, pa.Table]) -> PartIndex:
    """Writes each shard's rows of `by_shard` as a batch of one new part file; returns it."""
    Path(parts_dir).mkdir(parents=True, exist_ok=True)
    path = os.path.join(parts_dir, f"{prefix}-{uuid.uuid4().hex}")
    shards = sorted(by_shard)
    with pa.ipc.new_file(path, schema) as writer:
        for shard in shards:
            writer.write_batch(by_shard[shard].combine_chunks().to_batches()[0]
                               if by_shard[shard].num_rows else
                               pa.RecordBatch.from_pylist([], schema))
    return path, np.asarray(shards, dtype=np.int32).tobytes()


def batches_of_shard(parts: Sequence[PartIndex], shard: int) -> list[pa.RecordBatch]:
    """Shard `shard`'s batches of every part, read plainly (a memory map would keep every
    shard read resident)."""
    batches = []
    for path, index in parts:
        at = np.flatnonzero(np.frombuffer(index, dtype=np.int32) == shard)
        if not at.size:
            continue
        with pa.OSFile(path) as source:
            reader = pa.ipc.open_file(source)
            batches += [reader.get_batch(int(i)) for i in at]
    return batches
