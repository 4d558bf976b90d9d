"""The backend is decided once: the registry holds one `Backend` per `search.backend` value,
and no other module compares backend names."""

from __future__ import annotations

import ast
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from connectors import events
from pipeline.config.backends import BACKENDS, backend_of
from pipeline.config.loader import load_settings
from pipeline.config.settings import BACKEND_NAMES
from pipeline.run.summary import RunSummary

ROOT = Path(__file__).resolve().parents[3]
REGISTRY = {"pipeline/config/backends.py", "pipeline/config/embedded_backend.py",
            "pipeline/config/elasticsearch_backend.py"}


def test_every_backend_the_settings_accept_is_registered_under_its_name() -> None:
    assert tuple(BACKENDS) == BACKEND_NAMES
    for name in BACKEND_NAMES:
        backend = backend_of(load_settings(overrides=[f"search.backend={name}"]))
        assert backend.name == name and backend is BACKENDS[name]


def _compared_names(path: Path, root: Path = ROOT) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                if isinstance(operand, ast.Constant) and operand.value in BACKEND_NAMES:
                    found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


def test_no_module_outside_the_registry_compares_backend_names() -> None:
    sources = [p for package in ("pipeline", "stages", "connectors")
               for p in (ROOT / package).rglob("*.py")
               if str(p.relative_to(ROOT)) not in REGISTRY]
    assert [hit for path in sources for hit in _compared_names(path)] == []


def test_the_check_finds_a_comparison(tmp_path: Path) -> None:
    module = tmp_path / "probe.py"
    module.write_text('def f(s):\n    return s.backend == "elasticsearch"\n')
    assert _compared_names(module, tmp_path) == ["probe.py:2"]


def test_one_write_batch_serves_every_backend() -> None:
    settings = load_settings(overrides=["search.write-batch-size=7"])
    assert settings.search.write_batch_size == 7
    assert settings.search.elasticsearch.bulk_chunk_size == 7


def test_the_old_bulk_chunk_size_is_read_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        settings = load_settings(overrides=["search.elasticsearch.bulk-chunk-size=100"])
    assert settings.search.write_batch_size == 100
    assert settings.search.elasticsearch.bulk_chunk_size == 100
    assert ("search.elasticsearch.bulk-chunk-size is deprecated: it is "
            "search.write-batch-size now") in caplog.text


def test_the_new_key_wins_over_the_old_one() -> None:
    settings = load_settings(overrides=["search.elasticsearch.bulk-chunk-size=100",
                                        "search.write-batch-size=9"])
    assert settings.search.write_batch_size == 9


def test_request_counters_are_reported_by_the_backends_that_make_requests() -> None:
    assert BACKENDS["embedded"].counters == ()
    assert set(BACKENDS["elasticsearch"].counters) == set(events.REQUEST_EVENTS)


def test_a_summary_writes_the_old_counter_names_beside_the_new_ones() -> None:
    summary = RunSummary({"queries": 1, "results": 1, "dead_letters": 0,
                          "backend_requests": 3, "backend_retries": 1}, 1.0)
    counts = summary.to_dict()["counts"]
    assert isinstance(counts, dict)
    assert counts["es_requests"] == 3 and counts["backend_requests"] == 3
    assert counts["es_retries"] == 1 and "es_failures" not in counts


def test_the_retry_loop_imports_no_client() -> None:
    code = ("import sys, connectors.retry; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('elasticsearch', 'elastic_transport')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    assert out.strip() == "[]"
