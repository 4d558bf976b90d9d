"""A job run through the CLI by the SDK's venv, and what it left."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

JOB_SECONDS = 900
"""A job whose workers never come up waits forever on the portable runner: the test fails
after this instead."""


QUESTIONS = ["How do I parse a JSON document?", "read the lines of a file",
             "match a regular expression", "sort a list in place", "send an HTTP request",
             "format a date", "make a temporary directory", "copy a file",
             "run a command in a subprocess", "compute a SHA-256 digest"]
"""Text queries over the standard library's docs."""


@dataclass(frozen=True)
class Job:
    """What a job left: results by query id, dead letters in line order, the summary."""

    results: dict[str, dict]
    dead_letters: list[dict]
    summary: dict
    output: str
    manifest: dict


def cli(python: Path, env: dict[str, str], cwd: Path, *args: str) -> str:
    done = subprocess.run([str(python), "-m", "pipeline.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=JOB_SECONDS, check=False)
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout[-3000:]}\n" \
                                 f"{done.stderr[-6000:]}"
    return done.stdout + done.stderr


def run(python: Path, env: dict[str, str], work: Path, config: Path, queries: Path,
        *beam: str) -> Job:
    work.mkdir(parents=True, exist_ok=True)
    out, dead, summary = work / "out.jsonl", work / "dead.jsonl", work / "summary.json"
    output = cli(python, env, work, "run", "--config", str(config), "--queries", str(queries),
                 "--out", str(out), "--dead-letter", str(dead), "--summary", str(summary),
                 *beam)
    return Job(results_of(out),
               sorted(lines(dead), key=lambda d: d["line_number"]),
               json.loads(summary.read_text()), output,
               json.loads((work / "out.jsonl.manifest.json").read_text()))


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def results_of(path: Path) -> dict[str, dict]:
    """A result file's lines by query id."""
    return {row["query_id"]: row for row in lines(path)}
