"""A job imports the libraries of the backends it uses, and no others: the Elasticsearch client
(~0.5 s) and bm25s with scipy (~0.1 s) are paid for only by the jobs that need them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.builders import unit_vectors
from tests.pipeline.cli_runs import DIM

_HEAVY = ("elasticsearch", "elastic_transport", "bm25s", "scipy")


def _modules_after(script: str) -> list[str]:
    listing = f"\nimport json, sys\nprint(json.dumps(sorted(set({_HEAVY!r}) & set(sys.modules))))"
    done = subprocess.run([sys.executable, "-c", script + listing], capture_output=True,
                          text=True, check=True, cwd=Path(__file__).parents[3])
    return list(json.loads(done.stdout.splitlines()[-1]))


@pytest.mark.slow
def test_a_run_of_vector_queries_on_the_embedded_store_imports_no_other_backend(
        store_config: Path, tmp_path: Path) -> None:
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": "q", "vector": unit_vectors(1, dim=DIM)[0].tolist()})
                       + "\n")
    out = tmp_path / "out.jsonl"
    assert _modules_after(
        "from pipeline.cli.main import main\n"
        f"assert main(['run', '--config', {str(store_config)!r}, '--queries', "
        f"{str(queries)!r}, '--out', {str(out)!r}]) == 0") == []
    assert out.read_text().count("\n") == 1


def test_the_bm25s_logger_keeps_the_level_the_application_chose() -> None:
    assert _modules_after(
        "import logging\n"
        "logging.getLogger('bm25s').setLevel(logging.ERROR)\n"
        "from connectors.embedded.lexical import tokens\n"
        "assert tokens(['parse json', 'tomatoes']) == [['pars', 'json'], ['tomato']]\n"
        "assert logging.getLogger('bm25s').level == logging.ERROR, "
        "logging.getLogger('bm25s').level") == ["bm25s", "scipy"]


def test_the_command_exits_with_mains_code_and_the_collector_on(tmp_path: Path) -> None:
    """`console` (the `rag-evidence` script) freezes what start-up imported, then what the
    command leaves; the command's code is the process's, and collection stays on."""
    done = subprocess.run(
        [sys.executable, "-c", "import gc, sys\nfrom pipeline.cli.main import console\n"
         "try:\n    console(['explain', '--config', 'absent.yaml', '--query', 'q'])\n"
         "except SystemExit as exit_:\n"
         "    print(exit_.code, gc.isenabled(), gc.get_freeze_count() > 10_000)"],
        capture_output=True, text=True, check=True, cwd=tmp_path)
    assert done.stdout.split() == ["2", "True", "True"]
    assert "absent.yaml" in done.stderr


def test_explain_imports_no_beam(store_config: Path) -> None:
    """`explain` calls the stages' functions in this process: Beam (more than half a second to
    import) is not loaded, and the stages' modules hold no Beam step for it to load."""
    done = subprocess.run(
        [sys.executable, "-c", "import sys\nfrom pipeline.cli.main import main\n"
         f"assert main(['explain', '--config', {str(store_config)!r}, '--query', 'w']) == 0\n"
         "print(sorted(m for m in sys.modules if m.split('.')[0] == 'apache_beam')[:3])"],
        capture_output=True, text=True, check=True, cwd=Path(__file__).parents[3])
    assert done.stdout.splitlines()[-1] == "[]"
    assert "projected for the Agent" in done.stdout
