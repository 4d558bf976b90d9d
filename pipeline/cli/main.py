"""The `rag-evidence` command line: index, run, demo, eval, corpus."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence


class _BeamNoise(logging.Filter):
    """Beam warns on the root logger about optional GCP libraries we never use, and about
    output tags that its own exception handling wrapper does not declare."""

    NOISE = ("apitools not found", "requested in with_outputs() but not declared")

    def filter(self, record: logging.LogRecord) -> bool:
        return not any(noise in record.getMessage() for noise in self.NOISE)


logging.getLogger().addFilter(_BeamNoise())

from connectors.errors import RagEvidenceError  # noqa: E402
from pipeline.cli.commands import index_command, run_command  # noqa: E402
from pipeline.cli.demo import demo_command  # noqa: E402
from pipeline.cli.log_setup import configure_logging, with_worker_log_level  # noqa: E402
from pipeline.eval.command import corpus_command, eval_command  # noqa: E402

_log = logging.getLogger("rag_evidence")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rag-evidence", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="log what each step does (INFO), and Beam's warnings")
    commands = parser.add_subparsers(dest="command", required=True)

    def with_config(sub: argparse.ArgumentParser) -> argparse.ArgumentParser:
        sub.add_argument("--config", help="YAML settings file (e.g. configs/local.yaml)")
        sub.add_argument("--set", dest="overrides", action="append", default=[],
                         metavar="KEY=VALUE", help="override a setting, e.g. rag.return-n=8")
        return sub

    index = with_config(commands.add_parser("index", help="build the store"))
    source = index.add_mutually_exclusive_group(required=True)
    source.add_argument("--chunks", help="chunk records JSONL: id, vector, content, metadata")
    source.add_argument("--docs", help="folder of .txt/.md files to chunk and embed")
    index.add_argument("--failures", help="JSONL of chunks that failed to index (elasticsearch)")

    run = with_config(commands.add_parser(
        "run", help="answer queries; extra arguments are Beam pipeline options"))
    run.add_argument("--queries", required=True, help="query JSONL file")
    run.add_argument("--out", required=True, help="result JSONL file, or es://INDEX")
    run.add_argument("--dead-letter", help="dead-letter JSONL (default: OUT.dead-letter.jsonl)")

    demo = with_config(commands.add_parser("demo", help="index the stdlib docs and ask them"))
    demo.add_argument("--workdir", help="where to keep the demo store (default: a temp dir)")

    evaluate = with_config(commands.add_parser(
        "eval", help="score the evidence of one or more configs against relevance judgments"))
    evaluate.add_argument("--queries", required=True, help="query JSONL file")
    evaluate.add_argument("--qrels", required=True, help="judgments: TREC qrels or JSONL")
    evaluate.add_argument("--k", type=int, default=10, help="metric cut-off (default 10)")
    evaluate.add_argument("--compare", nargs="+", metavar="CONFIG",
                          help="more configs, a row each")
    evaluate.add_argument("--docs", help="first (re)build each config's store from this folder")
    evaluate.add_argument("--json", help="also write the table as JSON to this file")

    corpus = commands.add_parser("corpus", help="write the stdlib docs corpus (demo, eval)")
    corpus.add_argument("out", help="folder to write the Markdown documents into")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args, beam_args = _parser().parse_known_args(argv)
    configure_logging(args.verbose)
    if args.command in ("demo", "corpus") and beam_args:
        print(f"rag-evidence: unrecognized arguments: {' '.join(beam_args)}", file=sys.stderr)
        return 2
    beam_args = with_worker_log_level(beam_args, args.verbose)
    try:
        if args.command == "index":
            return index_command(args, beam_args, os.environ)
        if args.command == "run":
            return run_command(args, beam_args, os.environ)
        if args.command == "eval":
            return eval_command(args, beam_args, os.environ)
        if args.command == "corpus":
            return corpus_command(args)
        return demo_command(args, os.environ)
    except RagEvidenceError as error:
        print(f"rag-evidence: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
