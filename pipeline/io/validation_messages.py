"""One wording for pydantic validation failures: `field=value: message`, value shortened."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from pydantic import ValidationError


def failures(error: ValidationError) -> list[tuple[str, object, str]]:
    """(dotted field, bad value, message) for each failure in `error`."""
    return [(".".join(str(p) for p in item["loc"]) or "record", item.get("input"),
             plain_message(item["msg"])) for item in error.errors()]


def plain_message(message: str) -> str:
    """Pydantic's message without its `Value error, ` prefix (our validators' own words)."""
    return message.removeprefix("Value error, ")


def describe_validation_error(error: ValidationError, fields: Sequence[str] = ()) -> str:
    """Every failure as `field=value: message`, joined by `; `; a top-level field that is not
    one of `fields` (when given) is unknown, with the nearest of them as a suggestion."""
    parts = []
    for item in error.errors():
        field = ".".join(str(p) for p in item["loc"]) or "record"
        if item["type"] == "missing":  # its input is the whole record: not worth showing
            parts.append(f"{field}: is required (absent, or null)")
            continue
        shown = repr(item.get("input"))
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        message = plain_message(item["msg"])
        if item["type"] == "extra_forbidden" and fields and len(item["loc"]) == 1:
            near = difflib.get_close_matches(field, fields, n=1, cutoff=0.7)
            message = "unknown field; " + (f"did you mean {near[0]!r}?" if near
                                           else f"the fields are {list(fields)}")
        parts.append(f"{field}={shown}: {message}")
    return "; ".join(parts)
