"""The `rag-evidence` command line: index, run, demo, eval, corpus."""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import NoReturn, cast

from pipeline.cli.log_setup import configure_logging, with_worker_log_level


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rag-evidence", description=__doc__)
    verbose = argparse.ArgumentParser(add_help=False)  # -v after the command, too
    for where, default in ((parser, False), (verbose, argparse.SUPPRESS)):
        where.add_argument("-v", "--verbose", action="store_true", default=default,
                           help="log what each step does (INFO), and Beam's warnings")
    commands = parser.add_subparsers(dest="command", required=True)

    def command(name: str, help: str, config: bool = True) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, parents=[verbose], help=help)
        if config:
            sub.add_argument("--config", help="YAML settings file (e.g. configs/local.yaml)")
            sub.add_argument("--set", dest="overrides", action="append", default=[],
                             metavar="KEY=VALUE", help="override a setting, e.g. rag.return-n=8")
        return sub

    index = command("index", "build the store")
    source = index.add_mutually_exclusive_group(required=True)
    source.add_argument("--chunks", help="chunk records JSONL: id, vector, content, metadata")
    source.add_argument("--docs", help="folder of .txt/.md files to chunk and embed")
    index.add_argument("--failures", help="JSONL of the chunks that failed to index")
    index.add_argument("--follow-symlinks", action="store_true",
                       help="index documents that links in --docs lead to outside it")
    index.add_argument("--cleanup", choices=("none", "incremental", "full"),
                       default="incremental",
                       help="which stale chunks to delete: none; incremental (default): those "
                       "of the documents in the input; full: also every document absent from it")
    index.add_argument("--rebuild", action="store_true",
                       help="re-embed and rewrite every chunk (needed to change the embedder)")
    index.add_argument("--summary", help="also write the counts as JSON to this file")

    run = command("run", "answer queries; extra arguments are Beam pipeline options")
    run.add_argument("--queries", required=True, help="queries: a JSONL or Parquet file")
    run.add_argument("--out", required=True,
                     help="results: a JSONL or Parquet file, or es://INDEX")
    run.add_argument("--dead-letter", help="dead-letter JSONL (default: OUT.dead-letter.jsonl)")
    run.add_argument("--summary", help="also write the summary's counts as JSON to this file")
    run.add_argument("--max-dead-letters", metavar="N|N%",
                     help="exit 1 when more queries than this (a count, or a share of the "
                          "queries) end as dead letters; the results are written all the same")
    run.add_argument("--max-wall-time", metavar="DURATION",
                     help="cancel the job if it is still running after this long (seconds, "
                     "or 90m, 2h): it commits nothing and exits 3 (job.max-wall-time)")
    run.add_argument("--previous", metavar="PREV",
                     help="an earlier result file: write only the queries whose evidence changed")
    run.add_argument("--snapshot", metavar="FILE",
                     help="with --previous: also write every result to FILE (the next run's "
                     "--previous)")

    explain = command("explain", "show, stage by stage, where one query's evidence came from")
    explain.add_argument("--query", required=True, help="the query's text")
    explain.add_argument("--filters", help='metadata filters as JSON, e.g. {"docId": "a.md"}')
    explain.add_argument("--json", action="store_true", help="print JSON instead of tables")

    demo = command("demo", "index the stdlib docs and ask them")
    demo.add_argument("--workdir", help="where to keep the demo store (default: a temp dir)")

    evaluate = command("eval", "score the evidence of one or more configs against relevance "
                       "judgments")
    evaluate.add_argument("--queries", required=True, help="query JSONL file")
    evaluate.add_argument("--qrels", required=True, help="judgments: TREC qrels or JSONL")
    evaluate.add_argument("--k", type=int, default=10, help="metric cut-off (default 10)")
    evaluate.add_argument("--compare", nargs="+", metavar="CONFIG", help="more configs, a row each")
    evaluate.add_argument("--docs", help="first (re)build each config's store from this folder")
    evaluate.add_argument("--json", help="also write the table as JSON to this file")
    evaluate.add_argument("--plot", metavar="FILE.png",
                          help="also draw nDCG@k and Recall@k for k = 1..20 (the plot extra)")
    evaluate.add_argument("--losses", metavar="FILE.jsonl",
                          help="also write each relevant item a config lost: the stage that "
                               "dropped it and its best rank per retriever")

    corpus = command("corpus", "write the stdlib docs corpus (demo, eval)", config=False)
    corpus.add_argument("out", help="folder to write the Markdown documents into")
    return parser


CRASHED = 3
"""The exit code of a job that raised what no check foresaw: 1 and 2 keep their meanings (done
with failures; refused before starting)."""


COMMANDS = {
    "index": ("pipeline.cli.commands", "index_command"),
    "run": ("pipeline.cli.commands", "run_command"),
    "explain": ("pipeline.cli.explain_command", "explain_command"),
    "demo": ("pipeline.cli.demo", "demo_command"),
    "eval": ("pipeline.eval.command", "eval_command"),
    "corpus": ("pipeline.eval.command", "corpus_command"),
}
"""Each command's function, by module: a command imports what it runs and no more (`explain`
no Beam, `run` no evaluation)."""


def command_function(command: str) -> Callable[..., int]:
    """`command`'s function, its module imported the first time in this process with the
    collector paused and the result frozen: the thousands of objects of a few thousand modules
    are no garbage, and no collection walks them again."""
    module, name = COMMANDS[command]
    if module not in sys.modules:
        gc.disable()
        try:
            importlib.import_module(module)
        finally:
            gc.freeze()
            gc.enable()
    return cast(Callable[..., int], getattr(sys.modules[module], name))


def console(argv: Sequence[str] | None = None) -> NoReturn:
    """The `rag-evidence` command: `main`, then the process's end without a collection of what
    the job leaves (the interpreter frees it all at once)."""
    code = main(argv)
    gc.freeze()
    sys.exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    args, beam_args = _parser().parse_known_args(argv)
    configure_logging(args.verbose)
    # Imported once logging is set up: importing Beam logs warnings that the setup filters.
    function = command_function(args.command)
    from core.errors import RagEvidenceError, WallTimeExceededError, redact

    if args.command in ("demo", "corpus", "explain") and beam_args:
        print(f"rag-evidence: unrecognized arguments: {' '.join(beam_args)}", file=sys.stderr)
        return 2
    beam_args = with_worker_log_level(beam_args, args.verbose)
    try:
        if args.command in ("index", "run", "eval"):
            return function(args, beam_args, os.environ)
        if args.command == "corpus":
            return function(args)
        return function(args, os.environ)
    except WallTimeExceededError as error:
        print(f"rag-evidence: stopped: {error}", file=sys.stderr)
        return CRASHED
    except RagEvidenceError as error:
        print(f"rag-evidence: error: {error}", file=sys.stderr)
        return 2
    except Exception as error:  # a bug, or the machine (a full disk): never exit 0, 1 or 2
        traceback.print_exc()
        print(f"rag-evidence: crashed: {type(error).__name__}: {redact(str(error))[:500]} (the "
              "traceback is above); the job did not finish: no manifest was written and the "
              "embedded store keeps its version", file=sys.stderr)
        from pipeline.cli.crash_hints import crash_hint

        hint = crash_hint(str(error))
        if hint is not None:
            print(f"rag-evidence: {hint}", file=sys.stderr)
        return CRASHED


if __name__ == "__main__":
    console()
