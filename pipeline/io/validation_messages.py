"""One wording for pydantic validation failures: `field=value: message`, value shortened."""

from __future__ import annotations

from pydantic import ValidationError


def failures(error: ValidationError) -> list[tuple[str, object, str]]:
    """(dotted field, bad value, message) for each failure in `error`."""
    return [(".".join(str(p) for p in item["loc"]) or "record", item.get("input"),
             plain_message(item["msg"])) for item in error.errors()]


def plain_message(message: str) -> str:
    """Pydantic's message without its `Value error, ` prefix (our validators' own words)."""
    return message.removeprefix("Value error, ")


def describe_validation_error(error: ValidationError) -> str:
    """Every failure as `field=value: message`, joined by `; `."""
    parts = []
    for item in error.errors():
        field = ".".join(str(p) for p in item["loc"]) or "record"
        if item["type"] == "missing":  # its input is the whole record: not worth showing
            parts.append(f"{field}: is required (absent, or null)")
            continue
        shown = repr(item.get("input"))
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        parts.append(f"{field}={shown}: {plain_message(item['msg'])}")
    return "; ".join(parts)
