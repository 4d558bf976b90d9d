"""What a crash whose cause is known to us means, and where the docs say what to do: an
engine's own message (a Flink cluster's memory, say) names the engine's settings but not the
page that says which values a run of ours needs."""

from __future__ import annotations

CRASH_HINTS = {
    "Insufficient number of network buffers": (
        "the Flink cluster's network memory is too small for the shuffles this job keeps open "
        "at once", "docs/runners.md (Flink's network memory)"),
    "Direct buffer memory": (
        "the engine's task managers ran out of direct memory, which Beam's data channel to "
        "the SDK workers takes", "docs/runners.md (Direct memory)"),
}
"""A piece of an engine's error message -> what it means for a run, and where to read on."""


def crash_hint(message: str) -> str | None:
    """The hint for a crash whose message holds a known cause; None for any other."""
    for piece, (meaning, page) in CRASH_HINTS.items():
        if piece in message:
            return f"{meaning}: see {page}"
    return None
