"""Property: one record's value of any form the code does not expect (a document's file name
of any bytes, a chunk line's id, chunk index or metadata of any JSON, a query's id or filters
of any JSON) fails that document, line or query alone, into the failures file or the dead
letters, and the rest is indexed or answered: exit 0 or 1, never 3 or a traceback."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from pipeline.cli.main import main
from tests.attacks.test_every_path_of_every_kind import EXAMPLES
from tests.pipeline.cli_runs import DIM, lines_of

pytestmark = pytest.mark.slow  # whole index and run jobs, one per example

NO_SHRINKING = (Phase.explicit, Phase.reuse, Phase.generate)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=3),
    max_leaves=8)
FILE_NAMES = st.binary(min_size=1, max_size=40).filter(
    lambda b: b"/" not in b and b"\x00" not in b and b not in (b".", b".."))
SETTINGS = settings(max_examples=max(EXAMPLES // 3, 5), deadline=None, phases=NO_SHRINKING,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])


def _config(root: Path, store: Path) -> Path:
    config = root / "config.yaml"
    config.write_text(f"search:\n  embedded:\n    path: {store}\nembedder:\n  dim: {DIM}\n"
                      "rag:\n  retrieve-k: 10\n  return-n: 3\n")
    return config


@SETTINGS
@given(name=FILE_NAMES)
def test_a_document_of_any_file_name_fails_alone(name: bytes,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        docs = root / "docs"
        docs.mkdir()
        (docs / "good.md").write_text("# Good\n\nA document that reads well.")
        with open(os.path.join(bytes(docs), name + b".md"), "wb") as odd:
            odd.write(b"# Odd\n\nA document with an odd name.")
        failures = root / "failures.jsonl"
        config = _config(root, root / "store")
        capsys.readouterr()
        code = main(["index", "--config", str(config), "--docs", str(docs), "--failures",
                     str(failures), "--set", "embedder.kind=hashing"])
        error = capsys.readouterr().err
        assert code in (0, 1), error
        assert "Traceback" not in error
        summary = root / "summary.json"
        assert main(["index", "--config", str(config), "--docs", str(docs), "--summary",
                     str(summary), "--set", "embedder.kind=hashing"]) in (0, 1)
        counts = json.loads(summary.read_text())
        assert counts["unchanged"] + counts["added"] + counts["updated"] >= 1  # good.md
        assert len(lines_of(failures)) == (1 if code == 1 else 0)


@SETTINGS
@given(values=st.fixed_dictionaries({"id": JSON, "content": JSON, "metadata": JSON}))
def test_a_chunk_line_of_any_values_fails_alone(values: dict,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        chunks = root / "chunks.jsonl"
        good = {"id": "good#chunk-0", "vector": [1.0] + [0.0] * (DIM - 1), "content": "good",
                "metadata": {"docId": "good", "chunkIndex": 0}}
        odd = {**values, "vector": [0.0, 1.0] + [0.0] * (DIM - 2)}
        chunks.write_text(json.dumps(good) + "\n" + json.dumps(odd) + "\n")
        failures = root / "failures.jsonl"
        capsys.readouterr()
        code = main(["index", "--config", str(_config(root, root / "store")), "--chunks",
                     str(chunks), "--failures", str(failures)])
        error = capsys.readouterr().err
        assert code in (0, 1, 2), error  # 2: the odd line repeats the good line's id
        assert "Traceback" not in error
        if code != 2:
            assert len(lines_of(failures)) == (1 if code == 1 else 0)


@pytest.fixture(scope="module")
def store_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.pipeline.cli_runs import index_store

    return index_store(tmp_path_factory.mktemp("records"))


@SETTINGS
@given(values=st.fixed_dictionaries({"id": JSON, "filters": JSON}, optional={"text": JSON}))
def test_a_query_line_of_any_values_fails_alone(store_config: Path, values: dict,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        queries = root / "queries.jsonl"
        odd = {"vector": [1.0] * DIM, **values}
        queries.write_text(json.dumps({"id": "good", "vector": [1.0] * DIM}) + "\n"
                           + json.dumps(odd) + "\n")
        out, dead = root / "out.jsonl", root / "dead.jsonl"
        capsys.readouterr()
        code = main(["run", "--config", str(store_config), "--queries", str(queries),
                     "--out", str(out), "--dead-letter", str(dead)])
        error = capsys.readouterr().err
        assert code in (0, 1), error
        assert "Traceback" not in error
        answered = [r["query_id"] for r in lines_of(out)]
        assert "good" in answered
        assert len(answered) + len(lines_of(dead)) == 2
