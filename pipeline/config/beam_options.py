"""Beam pipeline options from the command line, checked before anything runs."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions, TypeOptions
from apache_beam.runners.runner import create_runner

from connectors.errors import ConfigError

TYPE_CHECK_AT_CONSTRUCTION = False
"""Whether our jobs have Beam type-check their graphs as it builds them. The graphs are fixed,
and tests/pipeline/test_graph_types.py builds each kind with the check on; skipping it here
takes 0.2 s off a run's 1.3 s start (view_as builds an argument parser per check)."""

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
