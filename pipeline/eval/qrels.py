"""Relevance judgments: TREC qrels (`qid 0 id relevance`) or JSONL, chunk- or document-level."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from core.chunk_identity import is_evidence_key
from core.errors import InvalidInputError

Level = Literal["chunk", "document"]


@dataclass(frozen=True)
class Qrels:
    """Judgments per query id: {id: relevance}. `level` is `chunk` when every id is an
    evidence key (`doc#chunk-N`, `vector:...`), else `document`."""

    judgments: dict[str, dict[str, int]]
    level: Level


def read_qrels(path: str | Path) -> Qrels:
    """Reads a qrels file; JSONL lines are `{"query_id", "id", "relevance"}`.

    Raises:
        InvalidInputError: a malformed line (named by file:line), no judgment at all, or
            chunk-level and document-level ids mixed in one file.
    """
    judgments: dict[str, dict[str, int]] = {}
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, start=1):
        if line.strip() and not line.lstrip().startswith("#"):
            query_id, judged_id, relevance = _parse(line, f"{path}:{number}")
            judgments.setdefault(query_id, {})[judged_id] = relevance
    if not judgments:
        raise InvalidInputError("--qrels", str(path), "holds no judgment")
    ids = [i for judged in judgments.values() for i in judged]
    chunk_level = [is_evidence_key(i) for i in ids]
    if any(chunk_level) and not all(chunk_level):
        raise InvalidInputError("--qrels", str(path), "mixes evidence keys (chunk-level) and "
                                "document ids (document-level); use one level per file")
    return Qrels(judgments, "chunk" if all(chunk_level) else "document")


def _parse(line: str, where: str) -> tuple[str, str, int]:
    if line.lstrip().startswith("{"):
        try:
            data = json.loads(line)
            return str(data["query_id"]), str(data["id"]), int(data.get("relevance", 1))
        except (ValueError, KeyError, TypeError, OverflowError) as error:
            raise InvalidInputError(where, line, f"is not a qrels JSON line ({error})") from None
    parts = line.split()
    if len(parts) != 4 or not parts[3].lstrip("-").isdigit():
        raise InvalidInputError(where, line, "must be `query_id 0 id relevance` (TREC qrels)")
    return parts[0], parts[2], int(parts[3])
