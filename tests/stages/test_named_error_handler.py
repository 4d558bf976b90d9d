"""NamedErrorHandler reaches into Beam's ErrorHandler (`_error_pcolls`, `_output`, `_closed`):
two of them in one pipeline must each collect their own failures, on the Beam we pin."""

from __future__ import annotations

from collections.abc import Callable

import apache_beam as beam
from apache_beam.testing.util import assert_that, equal_to

from pipeline.config.beam_options import job_pipeline, pipeline_options
from stages.support.internal_errors import NamedErrorHandler


def _fails_on(bad: int) -> Callable[[int], int]:
    def step(value: int) -> int:
        if value == bad:
            raise ValueError(f"bad {value}")
        return value
    return step


def test_two_named_handlers_in_one_pipeline_collect_apart() -> None:
    pipeline = job_pipeline(pipeline_options([]))
    first, second = NamedErrorHandler("First"), NamedErrorHandler("Second")
    numbers = pipeline | beam.Create([1, 2, 3])
    kept = (numbers
            | "One" >> beam.Map(_fails_on(1)).with_exception_handling(error_handler=first)
            | "Two" >> beam.Map(_fails_on(2)).with_exception_handling(error_handler=second))
    first.close()
    second.close()
    failed = {name: handler.output() | f"{name}Values" >> beam.Map(lambda bad: bad[0])
              for name, handler in (("first", first), ("second", second))}
    assert_that(kept, equal_to([3]), label="Kept")
    assert_that(failed["first"], equal_to([1]), label="FirstFailed")
    assert_that(failed["second"], equal_to([2]), label="SecondFailed")
    pipeline.run().wait_until_finish()
