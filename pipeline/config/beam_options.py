"""Beam pipeline options from the command line, checked before anything runs."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions, TypeOptions
from apache_beam.portability.api import beam_provision_api_pb2
from apache_beam.runners.portability.fn_api_runner.fn_runner import (
    ExtendedProvisionInfo,
    FnApiRunner,
)
from apache_beam.runners.portability.portable_runner import JobServiceHandle
from apache_beam.runners.runner import PipelineRunner, create_runner

from core.errors import ConfigError
from pipeline.config.engine_cancel import name_the_job

TYPE_CHECK_AT_CONSTRUCTION = False
"""Whether our jobs have Beam type-check their graphs as it builds them. The graphs are fixed,
and tests/pipeline/run/test_graph_types.py builds each kind with the check on; skipping it here
shortens every start (view_as builds an argument parser per check; docs/benchmarks.md)."""

REFUSED_RUNNERS = {
    "DaskRunner": "it sends every element of a multi-output step to every output and has no "
                  "metrics, so results would be lost without an error",
}


def pipeline_options(beam_args: Sequence[str]) -> PipelineOptions:
    """The options; an option or a runner that Beam does not know, or a runner that we refuse,
    is a ConfigError."""
    options = PipelineOptions(list(beam_args))
    _refuse_unknown_options(options)
    if not TYPE_CHECK_AT_CONSTRUCTION:
        options.view_as(TypeOptions).pipeline_type_check = False
    runner = options.view_as(StandardOptions).runner
    if runner is None:
        return options
    name = str(runner).rsplit(".", 1)[-1]
    if name in REFUSED_RUNNERS:
        raise ConfigError("--runner", runner, f"is not supported: {REFUSED_RUNNERS[name]}")
    try:
        create_runner(runner)
    except (ValueError, ImportError) as error:
        raise ConfigError("--runner", runner, f"is not a Beam runner here ({error})") from None
    return options


DEFAULT_RUNNER = "FnApiRunner"
"""The runner of a job given no `--runner`: the one Beam's DirectRunner settles on for a batch
job here. The DirectRunner first tries Prism: at every start it opens a worker pool and, where
no Prism binary is cached, downloads one from GitHub (or waits for the network to refuse), then
falls back. Choosing the FnApiRunner directly shortens every start (docs/benchmarks.md), never
fetches a binary at run time, and runs every job on the runner our tests run on."""


def job_runner(options: PipelineOptions) -> PipelineRunner | None:
    """The FnApiRunner, set up as the DirectRunner sets it up (the options provided to its
    workers), for options that name no runner and no streaming; None otherwise (Beam builds
    the runner the options name)."""
    if not _default_runs(options):
        return None
    encoded = JobServiceHandle.encode_pipeline_options(options.get_all_options())
    return FnApiRunner(provision_info=ExtendedProvisionInfo(
        beam_provision_api_pb2.ProvisionInfo(pipeline_options=encoded)))


def job_pipeline(options: PipelineOptions) -> beam.Pipeline:
    """An empty pipeline for one of our jobs, on `job_runner`'s runner when the options name
    none; a job on a Flink cluster named so that a cancelled run can find it there (see
    `engine_cancel`)."""
    name_the_job(options)
    return beam.Pipeline(runner=job_runner(options), options=options)


def runner_name(options: PipelineOptions) -> str:
    """The runner a job with `options` runs on, as the manifest records it."""
    if _default_runs(options):
        return DEFAULT_RUNNER
    return str(options.view_as(StandardOptions).runner or "DirectRunner")


def _default_runs(options: PipelineOptions) -> bool:
    standard = options.view_as(StandardOptions)
    return standard.runner is None and not standard.streaming


def _refuse_unknown_options(options: PipelineOptions) -> None:
    """Beam only logs a warning for an option it does not know (`--runnr`), then ignores it."""
    known = options.get_all_options()
    unknown = sorted(set(options.get_all_options(retain_unknown_options=True)) - set(known))
    if not unknown:
        return
    name = unknown[0]
    close = difflib.get_close_matches(name, list(known), n=1)
    hint = f" (did you mean --{close[0]}?)" if close else ""
    raise ConfigError(f"--{name}", options.get_all_options(retain_unknown_options=True)[name],
                      f"is not a Beam pipeline option{hint}; Beam would ignore it")
