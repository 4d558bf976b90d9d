"""What each CLI command does, given parsed arguments; the CLI owns the terminal."""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from apache_beam.io.filesystems import FileSystems

from connectors.embedded_store import write_store
from connectors.errors import ConfigError, InvalidInputError
from pipeline.backends import embedder_factory_for
from pipeline.build import ES_SCHEME
from pipeline.config_loader import load_settings
from pipeline.demo_report import DEMO_QUESTIONS, evidence_table
from pipeline.es_indexing import run_es_index
from pipeline.indexing import document_chunks, embed_chunks, read_chunk_records
from pipeline.run_job import run_job
from pipeline.settings import Settings
from pipeline.stdlib_corpus import write_corpus


def _settings(args: argparse.Namespace, environ: Mapping[str, str]) -> Settings:
    return load_settings(args.config, environ, args.overrides)


def index_command(args: argparse.Namespace, beam_args: Sequence[str],
                  environ: Mapping[str, str]) -> int:
    settings = _settings(args, environ)
    if settings.search.backend == "elasticsearch":
        summary = run_es_index(settings, chunks=args.chunks, docs=args.docs,
                               failures_path=args.failures, beam_args=beam_args)
        index = settings.search.elasticsearch.index
        created = " (created)" if summary.created_index else ""
        print(f"indexed {summary.indexed} chunks into Elasticsearch index {index}{created}; "
              f"{summary.failed} failed" + (f" (see {args.failures})" if args.failures else ""))
        return 0 if summary.failed == 0 else 1
    count = build_index(settings, chunks=args.chunks, docs=args.docs)
    print(f"indexed {count} chunks into {settings.search.embedded.path}")
    return 0


def build_index(settings: Settings, *, chunks: str | None = None, docs: str | None = None) -> int:
    """Writes the configured store from chunk records or a documents folder."""
    if settings.search.backend != "embedded":
        raise ConfigError("search.backend", settings.search.backend,
                          "build_index writes the embedded store only")
    if chunks is not None:
        records = read_chunk_records(chunks)
    else:
        embedder = embedder_factory_for(settings)()
        records = embed_chunks(document_chunks(docs or ".", settings.chunking.max_chars), embedder)
    return write_store(settings.search.embedded.path, records)


def run_command(args: argparse.Namespace, beam_args: Sequence[str],
                environ: Mapping[str, str]) -> int:
    settings = _settings(args, environ)
    if not FileSystems.exists(args.queries):
        raise InvalidInputError("--queries", args.queries, "does not exist")
    dead_letter = args.dead_letter or _default_dead_letter(args.out)
    summary = run_job(settings, queries_path=args.queries, out_path=args.out,
                      dead_letter_path=dead_letter, beam_args=beam_args)
    print("\n".join(summary.lines()))
    print(f"results: {args.out}\ndead letters: {dead_letter}")
    return 0 if summary.balanced else 1


def demo_command(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    with tempfile.TemporaryDirectory(prefix="rag-evidence-demo-") as scratch:
        work = Path(args.workdir or scratch)
        written = write_corpus(work / "docs")
        overrides = [f"search.embedded.path={work / 'store'}", *args.overrides]
        settings = load_settings(args.config, environ, overrides)
        count = build_index(settings, docs=str(work / "docs"))
        print(f"indexed {count} chunks from {written} standard-library modules")
        queries = work / "queries.jsonl"
        queries.write_text("".join(
            json.dumps({"id": f"q{i}", "text": q}) + "\n" for i, q in enumerate(DEMO_QUESTIONS, 1)))
        out = work / "evidence.jsonl"
        summary = run_job(settings, queries_path=str(queries), out_path=str(out),
                          dead_letter_path=str(work / "dead-letter.jsonl"))
        print(evidence_table(out))
        print("\n".join(summary.lines()))
    return 0 if summary.balanced else 1


def _default_dead_letter(out: str) -> str:
    if out.startswith(ES_SCHEME):
        return f"{out[len(ES_SCHEME):]}.dead-letter.jsonl"
    return f"{out}.dead-letter.jsonl"
