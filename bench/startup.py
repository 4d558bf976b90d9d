"""Start-up of small jobs: where the seconds of a 1- and a 20-query `run`, a night of those 20
continued from the last with nothing changed, an `explain` and an `index` of one changed
document go, on the embedded store with the packaged model (the semantic extra).

Each command runs in a fresh process, --repeat times; the table gives the median of each
phase, exclusive of the phases inside it:

- python: the interpreter's own start (a bare `python -c pass`, timed here);
- imports: importing the CLI's modules (`pipeline.cli.main` and what the command imports);
- settings: reading the config;
- store open: opening the embedded store (each open counted);
- model load: loading the model (each load counted);
- checks: the files and the preflight (queries against the store's embedder);
- construction: building the Beam pipeline;
- work: the Beam runner (explain: its stage functions), less the store opens and model
  loads inside it;
- model identity: the model's fingerprint, from its files (what the store and state record);
- rest: the command's own work (the summary, the manifest, the report);
- exit: from the command's return to the process's end (threads, atexit hooks).

    python bench/startup.py [--repeat 3] [--work /tmp/rag-evidence-startup]
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

CASES = {
    "run 1": ["run", "--queries", "{work}/q1.jsonl", "--out", "{work}/out1.jsonl"],
    "run 20": ["run", "--queries", "{work}/q20.jsonl", "--out", "{work}/out20.jsonl"],
    "night, no change": ["run", "--queries", "{work}/q20.jsonl", "--out", "{work}/night.jsonl",
                         "--previous", "{work}/first-night.jsonl",
                         "--snapshot", "{work}/night-snapshot.jsonl"],
    "explain": ["explain", "--query", "how do threads share files?"],
    "index 1 changed": ["index", "--docs", "{work}/docs"],
}
PHASES = {  # phase: (module, attribute) whose calls it times, looked up where they are called
    "settings": [("pipeline.cli.commands", "load_settings"),
                 ("pipeline.cli.explain_command", "load_settings")],
    "store open": [("connectors.embedded.store", "EmbeddedStore.open")],
    "model load": [("connectors.embedders.sentence_transformer",
                    "SentenceTransformerEmbedder.__init__")],
    "model identity": [("pipeline.run.job", "embedder_info"),
                       ("pipeline.ingest.job", "embedder_info")],
    "checks": [("pipeline.run.job", "preflight"), ("pipeline.io.run_io", "RunIO.check"),
               ("pipeline.ingest.job", "check_job_files")],
    "construction": [("pipeline.run.job", "build_pipeline")],
    "work": [("pipeline.run.job", "run_to_completion"),
               ("pipeline.ingest.job", "run_to_completion"),
               ("pipeline.cli.explain_command", "explain")],
}
COLUMNS = ["python", "imports", *PHASES, "rest", "exit"]


class _Clock:
    """Exclusive wall time per phase: a phase inside another is taken out of the outer one."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = dict.fromkeys(PHASES, 0.0)
        self.calls: dict[str, int] = dict.fromkeys(PHASES, 0)
        self._inner: list[float] = []

    def timed(self, phase: str, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            self._inner.append(0.0)
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                took = time.perf_counter() - started
                inner = self._inner.pop()
                self.spent[phase] += took - inner
                self.calls[phase] += 1
                if self._inner:
                    self._inner[-1] += took
        return wrapper


def _patch(clock: _Clock) -> None:
    """Times each place of `PHASES` whose module the command imported (and no other: importing
    one would change what is measured)."""
    for phase, places in PHASES.items():
        for module_name, attribute in places:
            if module_name not in sys.modules:
                continue
            owner: Any = sys.modules[module_name]
            *path, name = attribute.split(".")
            for part in path:
                owner = getattr(owner, part)
            function = owner.__dict__[name]
            if isinstance(function, classmethod):
                setattr(owner, name, classmethod(clock.timed(phase, function.__func__)))
            else:
                setattr(owner, name, clock.timed(phase, function))


def child(argv: list[str]) -> None:
    """One command in this process: its phases as JSON on the last line of stdout."""
    started = time.perf_counter()
    from pipeline.cli import main
    main.command_function(argv[0])  # the command's imports, as it makes them
    imported = time.perf_counter()
    clock = _Clock()
    _patch(clock)
    code = 0
    try:
        main.console(argv)
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    phases = {"imports": imported - started, **clock.spent,
              "total": time.perf_counter() - started, "code": code,
              "calls": clock.calls}
    print(json.dumps(phases))


def _timed_process(command: list[str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{command} exited {done.returncode}: {done.stderr[-2000:]}")
    return took, done.stdout


def _prepare(work: Path) -> Path:
    """A corpus of 30 Markdown documents, indexed; the query files; the config."""
    docs = work / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    for i in range(30):
        (docs / f"d{i}.md").write_text(
            f"# Document {i}\n\nThreads, files and sockets, part {i % 5}.\n\n## More\n\n"
            f"Subject {i}: how processes share files and wait on threads.\n", encoding="utf-8")
    for count in (1, 20):
        (work / f"q{count}.jsonl").write_text("".join(
            json.dumps({"id": f"q{i}", "text": f"how do threads share file {i}?"}) + "\n"
            for i in range(count)), encoding="utf-8")
    config = work / "config.yaml"
    config.write_text(f"search:\n  backend: embedded\n  embedded: {{path: {work / 'store'}}}\n"
                      "embedder:\n  kind: sentence-transformers\n  model: all-MiniLM-L6-v2\n",
                      encoding="utf-8")
    _timed_process([sys.executable, "-m", "pipeline.cli.main", "index", "--config",
                    str(config), "--docs", str(docs)])
    (work / "empty.jsonl").write_text("", encoding="utf-8")
    _timed_process([sys.executable, "-m", "pipeline.cli.main", "run", "--config", str(config),
                    "--queries", str(work / "q20.jsonl"), "--out", str(work / "first.jsonl"),
                    "--previous", str(work / "empty.jsonl"),
                    "--snapshot", str(work / "first-night.jsonl")])
    return config


def _row(name: str, runs: list[dict[str, Any]], python: float) -> str:
    total = statistics.median(run["wall"] for run in runs)
    values = {"python": python, "imports": statistics.median(r["imports"] for r in runs)}
    for phase in PHASES:
        values[phase] = statistics.median(r[phase] for r in runs)
    inside = statistics.median(r["total"] for r in runs)
    values["rest"] = max(0.0, inside - sum(values.values()) + python)
    values["exit"] = max(0.0, total - python - inside)
    calls = runs[0]["calls"]
    note = f"  (store opens {calls['store open']}, model loads {calls['model load']})"
    return (f"{name:<16}{total:>7.2f}" + "".join(f"{values[c]:>13.2f}" for c in COLUMNS)
            + note)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work", type=Path, default=Path("/tmp/rag-evidence-startup"))
    parser.add_argument("--child", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    if args.child is not None:
        child(args.child)
        return
    config = _prepare(args.work)
    python = statistics.median(_timed_process([sys.executable, "-c", "pass"])[0]
                               for _ in range(args.repeat))
    print(f"{'command':<16}{'total s':>7}" + "".join(f"{c:>13}" for c in COLUMNS))
    for name, template in CASES.items():
        argv = [part.format(work=args.work) for part in template] + ["--config", str(config)]
        runs = []
        for _ in range(args.repeat):
            if name.startswith("index"):  # one document changed since the last index
                changed = args.work / "docs" / "d0.md"
                changed.write_text(changed.read_text(encoding="utf-8") + f"\n{time.time()}\n",
                                   encoding="utf-8")
            wall, stdout = _timed_process([sys.executable, __file__, "--child", *argv])
            runs.append({**json.loads(stdout.strip().splitlines()[-1]), "wall": wall})
        print(_row(name, runs, python), flush=True)


if __name__ == "__main__":
    main()
