"""A run's input and outputs, parsed once from the command line."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from apache_beam.io.filesystems import FileSystems

from connectors.elasticsearch.config import ElasticsearchConfig
from connectors.ownership import held, lock_of
from core.errors import InvalidInputError
from pipeline.io.line_blocks import count_lines
from pipeline.io.local_paths import check_job_files, is_local
from pipeline.io.parquet import is_parquet
from pipeline.io.query_source import QuerySource, query_source
from pipeline.io.result_sink import ES_SCHEME, ResultFile, ResultSink, result_sink
from stages.support import counters

GONE_SUFFIX = ".gone.jsonl"
MANIFEST_SUFFIX = ".manifest.json"


@dataclass(frozen=True)
class RunIO:
    """Where queries come from, where results go, and the dead-letter JSONL file."""

    queries: QuerySource
    results: ResultSink
    dead_letters: str
    previous: ResultFile | None = None
    """With `--previous`: the earlier results that only changed evidence is written against."""
    snapshot: ResultFile | None = None
    """With `--previous`: where every result goes too, to be the next run's `--previous`."""
    summary: str | None = None
    """`--summary`: the run's counts as JSON (written by the CLI, checked here with the rest)."""
    config: str | None = None
    """`--config`: an input like the queries, never to be written over."""

    @classmethod
    def parse(cls, queries: str, out: str, dead_letter: str | None = None,
              elasticsearch: ElasticsearchConfig | None = None,
              previous: str | None = None, snapshot: str | None = None,
              summary: str | None = None, config: str | None = None) -> RunIO:
        """`--queries`, `--out`, `--dead-letter` (default: beside the results), `--previous`,
        `--snapshot`, `--summary` and `--config`; `elasticsearch` is the cluster an `es://`
        output writes to.

        Raises:
            InvalidInputError: `--previous` or `--snapshot` is no result file (JSONL or
                Parquet), or `--snapshot` comes without `--previous`.
        """
        results = result_sink(out, elasticsearch)
        if snapshot is not None and previous is None:
            raise InvalidInputError("--snapshot", snapshot, "needs --previous (without it, "
                                    "--out holds every result)")
        return cls(query_source(queries), results, dead_letter or results.default_dead_letter,
                   _result_file("--previous", previous), _result_file("--snapshot", snapshot),
                   summary, config)

    @property
    def manifest(self) -> str:
        """Where the run's manifest goes: beside a result file, or for `es://INDEX` beside the
        dead letters, named after the index (see `pipeline.run.manifest`)."""
        return f"{self._beside()}{MANIFEST_SUFFIX}"

    @property
    def manifests(self) -> list[str]:
        """The run's manifests, in the order they are written: the results', then (with
        `--snapshot`) the snapshot's, the same document beside the file that the next night
        reads; a snapshot with its manifest is the last thing a finished run leaves."""
        snapshot = [] if self.snapshot is None else [
            f"{self.snapshot.location}{MANIFEST_SUFFIX}"]
        return [self.manifest, *snapshot]

    @property
    def gone(self) -> str:
        """With `--previous`: the file of the earlier query ids this run did not answer."""
        return f"{self._beside()}{GONE_SUFFIX}"

    def _beside(self) -> str:
        if isinstance(self.results, ResultFile):
            return self.results.location
        index = self.results.location.removeprefix(ES_SCHEME)
        return str(Path(self.dead_letters).with_name(index))

    def check(self) -> None:
        """Refuses, before anything starts, a run whose files would lose results (see
        `local_paths.check_job_files`): every output, named or derived, against every input and
        every other output, links resolved."""
        previous = None if self.previous is None else self.previous.location
        inputs = [("--queries", self.queries.path), ("--previous", previous)]
        results = self.results.location if isinstance(self.results, ResultFile) else None
        snapshot = None if self.snapshot is None else self.snapshot.location
        derived = [(f"the manifest {path}", path) for path in self.manifests]
        if previous is not None:
            derived.append((f"the list of gone ids {self.gone}", self.gone))
        check_job_files([*inputs, ("--config", self.config)],
                        [("--out", results), ("--dead-letter", self.dead_letters),
                         ("--snapshot", snapshot), ("--summary", self.summary)],
                        derived=derived, binary=[p for _, p in inputs if p and is_parquet(p)])
        self.queries.check()

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Holds the output files for this run: a second run into one of them is refused,
        naming this one, instead of mixing its lines into ours."""
        with contextlib.ExitStack() as stack:
            for path in self.output_files():
                stack.enter_context(held(lock_of(path), path))
            yield

    def output_files(self) -> list[str]:
        """The local files this run writes."""
        files = [self.dead_letters, *([self.gone] if self.previous is not None else []),
                 *([self.snapshot.location] if self.snapshot is not None else [])]
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


def _result_file(flag: str, location: str | None) -> ResultFile | None:
    """The result file `location` names, for `flag`; None when not given."""
    if location is None:
        return None
    found = result_sink(location)
    if not isinstance(found, ResultFile):
        raise InvalidInputError(flag, location, "must be a JSONL or Parquet result file")
    return found
