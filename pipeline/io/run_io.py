"""A run's input and outputs, parsed once from the command line."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from apache_beam.io.filesystems import FileSystems

from connectors.elasticsearch.config import ElasticsearchConfig
from connectors.ownership import held
from pipeline.io.line_blocks import count_lines
from pipeline.io.local_paths import (
    check_distinct,
    check_input_file,
    check_output_file,
    is_local,
)
from pipeline.io.parquet import is_parquet
from pipeline.io.query_source import QuerySource, query_source
from pipeline.io.result_sink import ResultFile, ResultSink, result_sink
from stages import counters


@dataclass(frozen=True)
class RunIO:
    """Where queries come from, where results go, and the dead-letter JSONL file."""

    queries: QuerySource
    results: ResultSink
    dead_letters: str

    @classmethod
    def parse(cls, queries: str, out: str, dead_letter: str | None = None,
              elasticsearch: ElasticsearchConfig | None = None) -> RunIO:
        """`--queries`, `--out` and `--dead-letter` (default: beside the results);
        `elasticsearch` is the cluster an `es://` output writes to."""
        results = result_sink(out, elasticsearch)
        return cls(query_source(queries), results, dead_letter or results.default_dead_letter)

    def check(self) -> None:
        """Refuses, before anything starts, a run whose files would lose results (see
        `local_paths`)."""
        check_input_file("--queries", self.queries.path, text=not is_parquet(self.queries.path))
        self.queries.check()
        outputs = {"--dead-letter": self.dead_letters}
        if isinstance(self.results, ResultFile):
            outputs = {"--out": self.results.location, **outputs}
        for flag, path in outputs.items():
            check_output_file(flag, path)
        check_distinct({"--queries": self.queries.path, **outputs})

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Holds the output files for this run: a second run into one of them is refused,
        naming this one, instead of mixing its lines into ours."""
        with contextlib.ExitStack() as stack:
            for path in self.output_files():
                stack.enter_context(held(Path(f"{path}.lock"), path))
            yield

    def output_files(self) -> list[str]:
        """The local files this run writes."""
        files = [self.dead_letters]
        if isinstance(self.results, ResultFile):
            files.insert(0, self.results.location)
        return [f for f in files if is_local(f)]

    def counts(self) -> dict[str, int]:
        """queries, results and dead letters as the files hold them (for a runner that reports
        no metrics); results written to Elasticsearch count as the queries that were not dead
        letters."""
        queries = self.queries.count()
        dead = count_lines(self.dead_letters) if FileSystems.exists(self.dead_letters) else 0
        results = self.results.count()
        return {counters.QUERIES: queries,
                counters.RESULTS: queries - dead if results is None else results,
                counters.DEAD_LETTERS: dead}
