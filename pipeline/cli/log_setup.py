"""What the CLI logs: warnings and progress by default, this package's INFO with -v."""

from __future__ import annotations

import logging
from collections.abc import Sequence

OURS = ("pipeline", "stages", "connectors", "core", "rag_evidence")
PROGRESS = "rag_evidence.progress"
THIRD_PARTY = ("apache_beam", "elastic_transport", "elasticsearch", "bm25s",
               "sentence_transformers", "transformers", "httpx", "urllib3")


WORKER_LOG_LEVEL = "--default_sdk_harness_log_level"


class BeamNoise(logging.Filter):
    """Beam warns on the root logger about optional GCP libraries we never use, and about
    output tags that its own exception handling wrapper does not declare."""

    NOISE = ("apitools not found", "requested in with_outputs() but not declared")

    def filter(self, record: logging.LogRecord) -> bool:
        return not any(noise in record.getMessage() for noise in self.NOISE)


def with_worker_log_level(beam_args: Sequence[str], verbose: bool) -> list[str]:
    """Beam options with the workers' log level set (ERROR, or WARNING with -v), unless the
    user set it: a runner's worker processes log on their own, at INFO by default."""
    if any(arg.startswith(WORKER_LOG_LEVEL) for arg in beam_args):
        return list(beam_args)
    return [*beam_args, f"{WORKER_LOG_LEVEL}={'WARNING' if verbose else 'ERROR'}"]


def configure_logging(verbose: bool) -> None:
    """Default: warnings from everyone but Beam (whose own warnings, such as the file sink's
    "Deleting 1 existing files", are noise here), and the progress line. `-v`: also INFO
    from this package, and Beam's warnings."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s",
                        force=True)
    root = logging.getLogger()
    if not any(isinstance(f, BeamNoise) for f in root.filters):
        root.addFilter(BeamNoise())
    for name in OURS:
        logging.getLogger(name).setLevel(logging.INFO if verbose else logging.WARNING)
    logging.getLogger(PROGRESS).setLevel(logging.INFO)
    for name in THIRD_PARTY:
        logging.getLogger(name).setLevel(logging.WARNING)
    logging.getLogger("apache_beam").setLevel(logging.WARNING if verbose else logging.ERROR)
