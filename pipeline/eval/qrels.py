"""Relevance judgments: TREC qrels (`qid 0 id relevance`) or JSONL, chunk- or document-level."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from core.chunk_identity import is_evidence_key
from core.errors import InvalidInputError
from pipeline.io.local_paths import check_input_file

Level = Literal["chunk", "document"]


@dataclass(frozen=True)
class Qrels:
    """Judgments per query id: {id: relevance}. `level` is `chunk` when every id is an
    evidence key (`doc#chunk-N`, `vector:...`), else `document`."""

    judgments: dict[str, dict[str, int]]
    level: Level


def read_qrels(path: str | Path) -> Qrels:
    """Reads a qrels file; JSONL lines are `{"query_id", "id", "relevance"}`. A grade is a
    whole number from 0 up, in both forms (a missing JSON `relevance` is 1).

    Raises:
        InvalidInputError: the file is missing, not a regular file or not UTF-8; a malformed
            line or grade (named by file:line); no judgment at all; or chunk-level and
            document-level ids mixed in one file.
    """
    check_input_file("--qrels", str(path))
    judgments: dict[str, dict[str, int]] = {}
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            where = f"{path}:{number}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise InvalidInputError(where, raw[:80], "is not UTF-8 text") from None
            if line.strip() and not line.lstrip().startswith("#"):
                query_id, judged_id, relevance = _parse(line.rstrip("\r\n"), where)
                judgments.setdefault(query_id, {})[judged_id] = relevance
    if not judgments:
        raise InvalidInputError("--qrels", str(path), "holds no judgment")
    ids = [i for judged in judgments.values() for i in judged]
    chunk_level = [is_evidence_key(i) for i in ids]
    if any(chunk_level) and not all(chunk_level):
        raise InvalidInputError("--qrels", str(path), "mixes evidence keys (chunk-level) and "
                                "document ids (document-level); use one level per file")
    return Qrels(judgments, "chunk" if all(chunk_level) else "document")


_GRADE = "the relevance grade must be a whole number from 0 up (0 not relevant, 1, 2, ...)"


def _parse(line: str, where: str) -> tuple[str, str, int]:
    if line.lstrip().startswith("{"):
        try:
            data = json.loads(line)
            query_id, judged_id, relevance = data["query_id"], data["id"], data.get(
                "relevance", 1)
        except (ValueError, KeyError, TypeError) as error:
            raise InvalidInputError(where, line, f"is not a qrels JSON line ({error})") from None
        if isinstance(relevance, bool) or not isinstance(relevance, int) or relevance < 0:
            raise InvalidInputError(where, line, f"relevance={relevance!r}: {_GRADE}")
        return (*_ids(query_id, judged_id, line, where), relevance)
    parts = line.split()
    if len(parts) != 4:
        raise InvalidInputError(where, line, "must be `query_id 0 id relevance` (TREC qrels)")
    if not (parts[3].isascii() and parts[3].isdigit()):
        raise InvalidInputError(where, line, f"relevance={parts[3]!r}: {_GRADE}")
    return parts[0], parts[2], int(parts[3])


def _ids(query_id: object, judged_id: object, line: str, where: str) -> tuple[str, str]:
    """A JSON line's query id and judged id: strings or whole numbers, as query ids are."""
    for name, value in (("query_id", query_id), ("id", judged_id)):
        if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
            raise InvalidInputError(where, line, f"{name}={value!r}: must be a non-empty "
                                    "string or a whole number")
    return str(query_id), str(judged_id)
