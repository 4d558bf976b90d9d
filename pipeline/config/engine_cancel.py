"""Cancelling a job on its engine where the job service's cancel does not reach it.

Beam's Flink job server runs a job on a session cluster from a thread that waits for it; its
`Cancel` ends that wait, and the job goes on running on the cluster (seen on Flink 1.19 with
Beam 2.62: `tests/engines/test_worker_kill.py`). So a Flink job of ours gets a name of its own,
and a cancelled run also cancels, through Flink's REST API, every job of that name the cluster
still runs.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
import uuid

import apache_beam as beam
from apache_beam.options.pipeline_options import (
    FlinkRunnerOptions,
    GoogleCloudOptions,
    PipelineOptions,
    StandardOptions,
)

_log = logging.getLogger(__name__)
_ENDED = ("FINISHED", "FAILED", "CANCELED", "CANCELLING")
_REST_SECONDS = 10


def _flink_master(options: PipelineOptions, runner: str | None = None) -> str | None:
    """The REST address of the Flink cluster a job with `options` runs on (on `runner`, by
    default the one they name: Beam's portable runner clears it while it runs), if any."""
    runner = runner or str(options.view_as(StandardOptions).runner or "")
    master = options.view_as(FlinkRunnerOptions).flink_master
    if not runner.endswith("FlinkRunner") or not master or master.startswith("["):
        return None
    return master if master.startswith(("http://", "https://")) else f"http://{master}"


def name_the_job(options: PipelineOptions) -> None:
    """Gives a job on a Flink cluster a name of its own (`--job_name`, when not given), by which
    `cancel_on_engine` finds it."""
    if _flink_master(options) is None:
        return
    named = options.view_as(GoogleCloudOptions)
    if not named.job_name:
        named.job_name = f"rag-evidence-{uuid.uuid4().hex[:12]}"


def cancel_on_engine(pipeline: beam.Pipeline) -> list[str]:
    """Cancels, on the Flink cluster a job's options name, every job of its name that has not
    ended; returns their ids. Nothing for other runners; a cluster that does not answer is
    logged, not raised (the run is being given up already)."""
    options = pipeline.options
    master = _flink_master(options, type(pipeline.runner).__name__)
    name = options.view_as(GoogleCloudOptions).job_name
    if master is None or not name:
        return []
    try:
        with urllib.request.urlopen(f"{master}/jobs/overview", timeout=_REST_SECONDS) as answer:
            jobs = json.load(answer).get("jobs", [])
        cancelled = [job["jid"] for job in jobs
                     if job.get("name") == name and job.get("state") not in _ENDED]
        for jid in cancelled:
            request = urllib.request.Request(f"{master}/jobs/{jid}?mode=cancel",
                                             method="PATCH")
            urllib.request.urlopen(request, timeout=_REST_SECONDS).close()
    except (OSError, ValueError, KeyError, urllib.error.URLError) as error:
        _log.warning("could not cancel the job %r on the Flink cluster at %s (%s): cancel it "
                     "there (`flink cancel`, or the web UI)", name, master, error)
        return []
    if cancelled:
        _log.warning("cancelled on the Flink cluster at %s: job %r (%s)", master, name,
                     ", ".join(cancelled))
    return cancelled
