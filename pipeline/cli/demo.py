"""`rag-evidence demo`: index the standard library's docs, ask them six questions, show it."""

from __future__ import annotations

import argparse
import json
import logging
import tempfile
from collections.abc import Mapping
from pathlib import Path

from connectors.embedded.layout import OFFSETS_FILE, RECORDS_FILE
from connectors.embedded.records_file import RecordFile
from connectors.embedded.versions import current_version
from connectors.embedders.model_location import MINILM
from connectors.embedders.sentence_transformer import unavailable
from pipeline.cli.commands import index_report
from pipeline.cli.demo_report import DEMO_QUESTIONS, evidence_table
from pipeline.config.loader import load_settings
from pipeline.config.settings import Settings
from pipeline.eval.stdlib_corpus import check_corpus_folder, write_corpus
from pipeline.ingest.documents import HEADING
from pipeline.ingest.job import run_index
from pipeline.io.owned_folders import check_owned_folder, claim_folder
from pipeline.io.run_io import MANIFEST_SUFFIX
from pipeline.run.job import run_job

_log = logging.getLogger(__name__)
SEMANTIC = ["embedder.kind=sentence-transformers", f"embedder.model={MINILM}"]


def demo_settings(config: str | None, environ: Mapping[str, str], overrides: list[str],
                  store: Path) -> tuple[Settings, str]:
    """The demo's settings, and a line saying which embedder it uses and why.

    Unless the config or `--set` names an embedder, the demo uses all-MiniLM-L6-v2 when the
    semantic extra is installed, else the dependency-free hashing embedder.
    """
    chosen = load_settings(config, environ, [f"search.embedded.path={store}", *overrides])
    if "embedder" in chosen.model_fields_set:
        return chosen, f"embedder: {chosen.embedder.kind} (as configured)"
    unavailable = semantic_unavailable()
    if unavailable is None:
        semantic = load_settings(config, environ, [f"search.embedded.path={store}", *SEMANTIC,
                                                   *overrides])
        return semantic, (f"embedder: sentence-transformers {MINILM} on "
                          f"{semantic.embedder.backend} (semantic)")
    return chosen, f"embedder: hashing (lexical fallback: {unavailable})"


def semantic_unavailable() -> str | None:
    """Why the semantic demo cannot run here, or None when it can."""
    return unavailable(MINILM)


def chunk_headings(store: Path) -> dict[str, str]:
    """The heading each chunk of the embedded store at `store` falls under, by chunk id."""
    version = current_version(store)
    records = RecordFile.open(version / RECORDS_FILE, version / OFFSETS_FILE)
    headings = {}
    for row in range(len(records)):
        record = records.record(row)
        heading = (record.get("metadata") or {}).get(HEADING)
        if isinstance(heading, str):
            headings[str(record["id"])] = heading
    return headings


DEMO_MARKER = ".rag-evidence-demo"
"""The file that marks a `--workdir` as the demo's own (it writes there again on a rerun)."""
DEMO_FILES = ("docs", "store", "queries.jsonl", "evidence.jsonl", "dead-letter.jsonl",
              f"evidence.jsonl{MANIFEST_SUFFIX}")


def demo_command(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    if args.workdir:
        check_owned_folder("--workdir", args.workdir, DEMO_MARKER, DEMO_FILES)
        check_corpus_folder(str(Path(args.workdir) / "docs"), "--workdir's docs")
    with tempfile.TemporaryDirectory(prefix="rag-evidence-demo-") as scratch:
        work = Path(args.workdir or scratch)
        claim_folder(work, DEMO_MARKER)
        written = write_corpus(work / "docs")
        settings, embedder_line = demo_settings(args.config, environ, args.overrides,
                                                work / "store")
        print(embedder_line)
        summary = run_index(settings, docs=str(work / "docs"))
        print(index_report(settings, summary) + f", from {written} standard-library modules")
        queries = work / "queries.jsonl"
        queries.write_text("".join(
            json.dumps({"id": f"q{i}", "text": q}) + "\n" for i, q in enumerate(DEMO_QUESTIONS, 1)))
        out = work / "evidence.jsonl"
        result = run_job(settings, queries_path=str(queries), out_path=str(out),
                         dead_letter_path=str(work / "dead-letter.jsonl"))
        print(evidence_table(out, chunk_headings(work / "store")))
        print("\n".join(result.lines()))
    return 0 if result.balanced else 1
