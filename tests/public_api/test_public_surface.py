"""The public surface: a facade that defines nothing, documented, and the library page's example
(docs/library.md), which runs as a user would run it."""

from __future__ import annotations

import ast
import doctest
import importlib
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

import pipeline.api
import pipeline.testing

ROOT = Path(__file__).resolve().parents[2]


def test_the_api_module_only_imports_and_lists_names() -> None:
    tree = ast.parse(Path(pipeline.api.__file__).read_text())
    kinds = {type(node).__name__ for node in tree.body[1:]}  # after its docstring
    assert kinds <= {"ImportFrom", "Assign"}
    assigned = [t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets
                if isinstance(t, ast.Name)]
    assert assigned == ["__all__"]


@pytest.mark.parametrize("module", [pipeline.api, pipeline.testing])
def test_every_public_name_is_there_and_documented(module: object) -> None:
    for name in module.__all__:  # type: ignore[attr-defined]
        value = getattr(module, name)
        if inspect.isclass(value) or inspect.isfunction(value):  # not the type aliases
            assert (value.__doc__ or "").strip(), f"{name} has no docstring"


@pytest.mark.parametrize("module", ["pipeline.testing", "pipeline.config.backends", "stages.models",
                                    "pipeline.config.loader", "core.params",
                                    "connectors.embedded.memory"])
def test_the_usage_examples_in_docstrings_run(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module))
    assert result.failed == 0 and result.attempted > 0


@pytest.mark.slow
def test_the_documented_library_example_runs_as_written(tmp_path: Path) -> None:
    page = (ROOT / "docs" / "library.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"<!-- runnable: library example -->\n```python\n(.*?)```", page,
                          flags=re.S)
    script = tmp_path / "example.py"
    script.write_text(block + 'print("evidence checked")\n')
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("evidence checked")


def test_the_package_ships_its_type_marker() -> None:
    for package in ("pipeline", "stages", "connectors", "core"):
        assert (ROOT / package / "py.typed").is_file()
    assert '"*" = ["py.typed"]' in (ROOT / "pyproject.toml").read_text()
