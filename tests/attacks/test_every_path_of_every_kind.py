"""Property: every command's every file flag, given a path of any hostile kind (an input or
config, another output, a folder, a user's folder, a dangling link, a path under a file or in
a missing folder, a link to an input, a pipe, a file that is not UTF-8, a compressed name, or
an ordinary new file of any Unicode name), ends in exit 0, 1 or 2, never 3 or a traceback;
changes no input file; and on exit 2 writes nothing at all."""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from pipeline.cli.main import main
from tests.builders import chunk_records, unit_vectors

EXAMPLES = int(os.environ.get("RAG_EVIDENCE_PROPERTY_EXAMPLES", "30"))
"""Examples per property: bounded for the fast loop; CI may raise it."""
DIM = 8
NO_SHRINKING = (Phase.explicit, Phase.reuse, Phase.generate)
"""A failing example is printed as found: shrinking whole jobs takes minutes."""


@dataclass(frozen=True)
class Flag:
    """A command's file flag: `argv(files, path)` is the command line with `path` as the flag's
    value; `output` says whether the command writes it; `partner` is another output flag of
    the command, given the same path for the "another output" kind."""

    command: str
    name: str
    output: bool
    argv: Callable[[dict[str, Path], str], list[str]]
    partner: str | None = None


def _run(files: dict[str, Path], flag: str, path: str, partner: str | None = None
         ) -> list[str]:
    given = {"--queries": str(files["queries"]), "--out": str(files["root"] / "out.jsonl"),
             "--config": str(files["config"])}
    given[flag] = path
    if partner:
        given[partner] = path
    if "--snapshot" in given:
        given.setdefault("--previous", str(files["previous"]))
    return ["run", *(part for pair in given.items() for part in pair)]


def _index(files: dict[str, Path], flag: str, path: str, partner: str | None = None
           ) -> list[str]:
    given = {"--chunks": str(files["chunks"]), "--config": str(files["index_config"])}
    given[flag] = path
    if partner:
        given[partner] = path
    return ["index", *(part for pair in given.items() for part in pair)]


def _eval(files: dict[str, Path], flag: str, path: str, partner: str | None = None
          ) -> list[str]:
    given = {"--queries": str(files["queries"]), "--qrels": str(files["qrels"]),
             "--config": str(files["config"])}
    given[flag] = path
    if partner:
        given[partner] = path
    return ["eval", *(part for pair in given.items() for part in pair)]


FLAGS = [
    *(Flag("run", name, True, lambda f, p, n=name, q=partner: _run(f, n, p), partner)
      for name, partner in (("--out", "--summary"), ("--dead-letter", "--out"),
                            ("--summary", "--dead-letter"), ("--snapshot", "--out"))),
    *(Flag("run", name, False, lambda f, p, n=name: _run(f, n, p))
      for name in ("--queries", "--previous", "--config")),
    *(Flag("index", name, True, lambda f, p, n=name: _index(f, n, p), partner)
      for name, partner in (("--failures", "--summary"), ("--summary", "--failures"))),
    *(Flag("index", name, False, lambda f, p, n=name: _index(f, n, p))
      for name in ("--chunks", "--config")),
    *(Flag("eval", name, True, lambda f, p, n=name: _eval(f, n, p), partner)
      for name, partner in (("--json", "--losses"), ("--losses", "--json"),
                            ("--plot", "--json"))),
    *(Flag("eval", name, False, lambda f, p, n=name: _eval(f, n, p))
      for name in ("--qrels", "--queries")),
    Flag("index", "search.embedded.path", True,
         lambda f, p: _index(f, "--set", f"search.embedded.path={p}")),
    Flag("run", "search.embedded.path", False,
         lambda f, p: _run(f, "--set", f"search.embedded.path={p}")),
    Flag("corpus", "OUT", True, lambda f, p: ["corpus", p]),
    Flag("demo", "--workdir", True, lambda f, p: ["demo", "--workdir", p]),
]

KINDS = ("queries", "config", "qrels", "chunks", "another output", "folder", "user's folder",
         "dangling link", "under a file", "missing folder", "link to an input", "pipe",
         "not UTF-8", "compressed", "new file")
NAMES = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00"),
                min_size=1, max_size=24).filter(lambda n: n not in (".", "..")
                                                and len(n.encode()) < 200)


def _inputs(root: Path, store: Path) -> dict[str, Path]:
    """The files of one example under `root`: inputs of every command, and a user's notes."""
    queries = root / "queries.jsonl"
    queries.write_text(json.dumps({"id": "q1", "vector": [1.0] + [0.0] * (DIM - 1)}) + "\n")
    config = root / "config.yaml"
    config.write_text(f"search:\n  embedded:\n    path: {store}\nembedder:\n  dim: {DIM}\n"
                      "rag:\n  retrieve-k: 10\n  return-n: 3\n")
    index_config = root / "index.yaml"
    index_config.write_text(f"search:\n  embedded:\n    path: {root / 'store'}\n"
                            f"embedder:\n  dim: {DIM}\n")
    chunks = root / "chunks.jsonl"
    chunks.write_text("".join(r.model_dump_json() + "\n"
                              for r in chunk_records(unit_vectors(6, dim=DIM))))
    qrels = root / "qrels.tsv"
    qrels.write_text("q1 0 doc0 1\n")
    previous = root / "previous.jsonl"
    previous.write_text("")
    notes = root / "notes.txt"
    notes.write_text("a user's notes")
    return {"root": root, "queries": queries, "config": config, "index_config": index_config,
            "chunks": chunks, "qrels": qrels, "previous": previous, "notes": notes}


def _path_of(kind: str, files: dict[str, Path], name: str) -> str:
    root = files["root"]
    if kind in ("queries", "config", "qrels", "chunks"):
        return str(files[kind])
    if kind in ("folder", "another output", "new file", "compressed"):
        target = root / "made" / name
        target.parent.mkdir(exist_ok=True)
        if kind == "folder":
            target.mkdir()
        return str(target) + (".jsonl.gz" if kind == "compressed" else "")
    if kind == "user's folder":
        mine = root / "mine"
        mine.mkdir()
        (mine / "queries.jsonl").write_text("my own queries")
        return str(mine)
    if kind == "dangling link":
        (root / "dangling").symlink_to(root / "nowhere" / "x")
        return str(root / "dangling")
    if kind == "under a file":
        return str(files["notes"] / name)
    if kind == "missing folder":
        return str(root / "no" / "such" / name)
    if kind == "link to an input":
        (root / "link").symlink_to(files["queries"])
        return str(root / "link")
    if kind == "pipe":
        os.mkfifo(root / "pipe")
        return str(root / "pipe")
    assert kind == "not UTF-8"
    latin = root / "latin1.jsonl"
    latin.write_bytes('{"id": "caf\xe9"}\n'.encode("utf-16"))
    return str(latin)


def _tree(root: Path) -> dict[str, str]:
    """Every entry under `root` (links not followed), files with their SHA-256."""
    found = {}
    for folder, folders, names in os.walk(root):
        for name in [*folders, *names]:
            path = Path(folder) / name
            found[str(path)] = ("link" if path.is_symlink() else "folder" if path.is_dir()
                                else "pipe" if path.is_fifo()
                                else hashlib.sha256(path.read_bytes()).hexdigest())
    return found


@contextlib.contextmanager
def _example(store: Path) -> Iterator[dict[str, Path]]:
    with tempfile.TemporaryDirectory(prefix="paths-") as root:
        yield _inputs(Path(root), store)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("store")
    files = _inputs(root, root / "store")
    assert main(["index", "--config", str(files["index_config"]), "--chunks",
                 str(files["chunks"])]) == 0
    return root / "store"


@settings(max_examples=EXAMPLES, deadline=None, phases=NO_SHRINKING,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(flag=st.sampled_from([f for f in FLAGS if f.command != "demo"]),
       kind=st.sampled_from(KINDS), name=NAMES)
def test_a_path_of_any_kind_is_exit_0_1_or_2_and_loses_nothing(
        store: Path, flag: Flag, kind: str, name: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    with _example(store) as files:
        path = _path_of(kind, files, name)
        argv = (flag.argv(files, path) if kind != "another output" or flag.partner is None
                else _with_partner(flag, files, path))
        before = _tree(files["root"])
        capsys.readouterr()
        code = main(argv)
        error = capsys.readouterr().err
        assert code in (0, 1, 2), (argv, error)
        assert "Traceback" not in error
        after = _tree(files["root"])
        replaced = _replaceable(flag, argv, path)
        changed = [p for p, d in before.items() if d not in ("folder", "link", "pipe")
                   and after.get(p) != d and os.path.realpath(p) != replaced]
        assert not changed, (argv, error)  # no file that was there is changed or gone
        if code == 2:
            assert after == before, (argv, error)  # nothing written


INPUT_FLAGS = ("--queries", "--config", "--chunks", "--qrels", "--previous")


def _replaceable(flag: Flag, argv: list[str], path: str) -> str | None:
    """The file an output flag may write over: its own path, unless that is one of the
    command's inputs (which no command may write)."""
    if not flag.output:
        return None
    inputs = {os.path.realpath(value) for option, value in itertools.pairwise(argv)
              if option in INPUT_FLAGS}
    real = os.path.realpath(path)
    return None if real in inputs else real


def _with_partner(flag: Flag, files: dict[str, Path], path: str) -> list[str]:
    builders = {"run": _run, "index": _index, "eval": _eval}
    if flag.command not in builders:
        return flag.argv(files, path)
    return builders[flag.command](files, flag.name, path, flag.partner)


@settings(max_examples=max(EXAMPLES // 3, 5), deadline=None, phases=NO_SHRINKING,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(kind=st.sampled_from([k for k in KINDS if k not in (  # those a demo may make or use
    "new file", "folder", "another output", "compressed", "missing folder")]), name=NAMES)
def test_a_demo_workdir_of_any_hostile_kind_is_refused_and_loses_nothing(
        store: Path, kind: str, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    with _example(store) as files:
        path = _path_of(kind, files, name)
        before = _tree(files["root"])
        capsys.readouterr()
        code = main(["demo", "--workdir", path])
        error = capsys.readouterr().err
        assert code == 2, error
        assert "Traceback" not in error
        if code == 2:
            assert _tree(files["root"]) == before
