"""`OUT.manifest.json`, written last by a run: what its results were computed from, and what they
hold. A result file with no manifest, or whose size or hash differ from its manifest's, is not
the output of a finished run."""

from __future__ import annotations

import datetime
import hashlib
import json
import os
from collections import Counter
from importlib import metadata
from pathlib import Path
from typing import Any

from apache_beam.options.pipeline_options import PipelineOptions

from core.errors import redact
from core.file_digest import file_sha256
from pipeline.config.backends import backend_of
from pipeline.config.beam_options import runner_name
from pipeline.config.settings import Settings
from pipeline.io.json_file import write_json_file
from pipeline.io.line_blocks import read_numbered_lines
from pipeline.io.local_paths import is_local
from pipeline.io.run_io import RunIO
from pipeline.run.chain import candidate_chain
from pipeline.run.summary import RunSummary


def remove_manifests(paths: list[str]) -> None:
    """Removes an earlier run's manifests, so that a run killed before its end leaves none."""
    for path in paths:
        if is_local(path) and os.path.exists(path):
            os.remove(path)


def write_manifests(paths: list[str], document: dict[str, Any]) -> None:
    """Writes `document` to each manifest in turn, each renamed into place (local paths only):
    the snapshot's last, once every file it describes is in place."""
    for path in paths:
        write_json_file(path, document, sort_keys=True)


def run_manifest(settings: Settings, io: RunIO, summary: RunSummary, options: PipelineOptions,
                 started: datetime.datetime, ended: datetime.datetime,
                 version: Path | None = None, runner: str | None = None) -> dict[str, Any]:
    """The manifest of a finished run (no secret: settings hold where secrets are, never
    secrets, and hosts are redacted); `version` is the embedded store's version it read;
    `runner` the runner it ran on, read before the run (Beam's portable runner clears it
    from the options while it runs)."""
    return {
        "rag_evidence": package_version(),
        "runner": runner or runner_name(options),
        "settings_sha256": hashlib.sha256(settings.model_dump_json().encode()).hexdigest(),
        "store": backend_of(settings).described(settings, version),
        "chain": [{"step": step.name, **(step.about or {})}
                  for step in candidate_chain(settings.rag)],
        "queries": {**_file(io.queries.path, digest=False),
                    "records": summary.counts.get("queries")},
        "results": _file(io.results.location) if is_local(io.results.location) else {
            "location": redact(io.results.location)},
        "dead_letters": {**_file(io.dead_letters), "by_stage": _stages(io.dead_letters)},
        **_previous(io),
        "counts": summary.counts,
        **({"hnsw_recall": recalls} if (recalls := summary.hnsw_recalls()) else {}),
        "balanced": summary.balanced,
        "started": started.isoformat(),
        "ended": ended.isoformat(),
    }


def _previous(io: RunIO) -> dict[str, Any]:
    if io.previous is None:
        return {}
    snapshot = {} if io.snapshot is None else {"snapshot": _file(io.snapshot.location)}
    return {"previous": _file(io.previous.location),
            "gone": {**_file(io.gone, digest=False), "note": "PREV's query ids not answered"},
            **snapshot}


def package_version() -> str:
    """The installed rag-evidence version ("unknown" when not installed)."""
    try:
        return metadata.version("rag-evidence")
    except metadata.PackageNotFoundError:
        return "unknown"


def _file(path: str, digest: bool = True) -> dict[str, Any]:
    if not is_local(path) or not os.path.isfile(path):
        return {"path": path}
    stat = os.stat(path)
    described: dict[str, Any] = {
        "path": path, "bytes": stat.st_size,
        "modified": datetime.datetime.fromtimestamp(stat.st_mtime, datetime.UTC).isoformat()}
    if digest:
        described["sha256"] = file_sha256(path)
    return described


def _stages(path: str) -> dict[str, int]:
    if not is_local(path) or not os.path.isfile(path):
        return {}
    stages: Counter[str] = Counter()
    for _, line in read_numbered_lines(path):
        if isinstance(line, bytes):
            stages[str(json.loads(line).get("stage"))] += 1
    return dict(stages)
